// Drives ketch-claude with Claude Code's official TypeScript Agent SDK
// (@anthropic-ai/claude-agent-sdk), as a program written for `claude` would.
// Usage: node sdk_ts_driver.mjs SCENARIO  (CLI path, workspace and env come from the
// environment: KETCH_CLAUDE, KETCH_WS). Prints one JSON object: what the program saw.
import { createSdkMcpServer, query, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";

const scenario = process.argv[2];
const base = {
  pathToClaudeCodeExecutable: process.env.KETCH_CLAUDE,
  cwd: process.env.KETCH_WS,
  env: { ...process.env },
};

function summary(m) {
  if (m.type === "assistant") {
    return { type: "assistant", blocks: m.message.content.map((b) => ({ type: b.type, name: b.name, id: b.id, text: b.text, input: b.input })) };
  }
  if (m.type === "user") {
    const content = Array.isArray(m.message.content) ? m.message.content : [];
    return { type: "user", results: content.filter((b) => b.type === "tool_result").map((b) => ({ id: b.tool_use_id, content: b.content, is_error: b.is_error })) };
  }
  if (m.type === "system") return { type: "system", subtype: m.subtype, tools: m.tools, permissionMode: m.permissionMode, session_id: m.session_id };
  if (m.type === "result") return { type: "result", subtype: m.subtype, is_error: m.is_error, result: m.result, num_turns: m.num_turns, stop_reason: m.stop_reason, denials: m.permission_denials, session_id: m.session_id };
  return { type: m.type };
}

// Reads messages up to the next result (or the end) without closing the query: a
// `break` out of `for await` would end the whole session.
async function collect(q, untilResult) {
  const seen = [];
  while (true) {
    const { value, done } = await q.next();
    if (done) return seen;
    seen.push(summary(value));
    if (untilResult && value.type === "result") return seen;
  }
}

// A prompt stream the program feeds turn by turn.
function inbox() {
  const queue = [];
  let wake = null;
  let done = false;
  return {
    push(text) {
      queue.push({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" });
      if (wake) wake();
    },
    end() { done = true; if (wake) wake(); },
    async *[Symbol.asyncIterator]() {
      while (true) {
        while (queue.length) yield queue.shift();
        if (done) return;
        await new Promise((r) => { wake = r; });
        wake = null;
      }
    },
  };
}

if (scenario === "query") {
  const seen = await collect(query({ prompt: "What is in notes.md?", options: base }), false);
  console.log(JSON.stringify({ seen }));
} else if (scenario === "control") {
  const asked = [];
  const hooked = [];
  const prompts = inbox();
  const q = query({
    prompt: prompts,
    options: {
      ...base,
      canUseTool: async (name, input) => {
        asked.push([name, input.path ?? ""]);
        return input.path === "allowed.txt"
          ? { behavior: "allow", updatedInput: input }
          : { behavior: "deny", message: "not that one" };
      },
      hooks: {
        PreToolUse: [{
          matcher: "Write",
          hooks: [async (data) => {
            hooked.push({ tool_name: data.tool_name, path: data.tool_input.path });
            if (String(data.tool_input.path).includes("hooked")) {
              return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "the hook says no" } };
            }
            return {};
          }],
        }],
      },
    },
  });
  prompts.push("write three files");
  const first = await collect(q, true);
  prompts.push("slow question");
  await new Promise((r) => setTimeout(r, 1000));
  const started = Date.now();
  await q.interrupt();
  const second = await collect(q, true);
  const elapsed = (Date.now() - started) / 1000;
  await q.setPermissionMode("acceptEdits");
  prompts.push("write the plan");
  const third = await collect(q, true);
  prompts.end();
  await collect(q, false); // to the end of the session
  console.log(JSON.stringify({ asked, hooked, first, second, third, elapsed }));
} else if (scenario === "mcp") {
  const calls = [];
  const add = tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async (args) => {
    calls.push(args);
    return { content: [{ type: "text", text: `sum=${args.a + args.b}` }] };
  });
  const calc = createSdkMcpServer({ name: "calc", version: "1.0.0", tools: [add] });
  const seen = await collect(query({
    prompt: "add 2 and 40, then touch a file",
    options: { ...base, mcpServers: { calc }, allowedTools: ["mcp__calc__add"], disallowedTools: ["Bash"] },
  }), false);
  console.log(JSON.stringify({ calls, seen }));
} else {
  console.error(`unknown scenario ${scenario}`);
  process.exit(2);
}
