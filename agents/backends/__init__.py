"""Agent backends: the agent protocol, one factory, and the HF, vLLM, OpenAI-compatible, oracle and scripted agents."""
