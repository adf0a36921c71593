from micro_rag_mcp.serve.main import main

raise SystemExit(main())
