from micro_rag_mcp.service.entry import main

raise SystemExit(main())
