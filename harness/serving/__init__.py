"""Talking to models: the LiteLLM client and its provider errors (model_client, provider_errors), a job's model
specs (models), the managed llama.cpp server (local_server), the pre-run route and key check (credentials) and
prompted tool calling for models without native tools (prompted_tools)."""
