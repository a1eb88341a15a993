// Claude Code (npm @anthropic-ai/claude-code), Anthropic Messages: the real agent, non-interactively, against recur serve on
// qwen3, qwen3_5 and llama checkpoints (tests/e2e/agents.mjs says what is judged).
import { describe, test } from 'node:test';
import { makeModel, startServer } from './harness.mjs';
import { agentSuite } from './agents.mjs';

agentSuite('claude', { makeModel, startServer, describe, test });
