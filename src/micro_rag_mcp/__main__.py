from micro_rag_mcp.main import main

raise SystemExit(main())
