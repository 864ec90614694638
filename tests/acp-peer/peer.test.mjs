// The official ACP TypeScript client (@agentclientprotocol/sdk, pinned in package.json)
// driving the built `dsh acp`: wire compatibility checked by code dsh did not write.
// Run by tests/tests/acp_peer.rs with DSH_BIN set; `npm ci` installs the client first.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, RequestError } from "@agentclientprotocol/sdk";
// The same client with the schema of ACP's newer surfaces (child sessions among them).
import * as unstable from "@agentclientprotocol/sdk/unstable";

const BIN = process.env.DSH_BIN;
assert.ok(BIN, "DSH_BIN names the built dsh binary");

function sandbox(entries) {
  const root = mkdtempSync(join(tmpdir(), "dsh-peer-"));
  const work = join(root, "work");
  mkdirSync(work);
  const script = join(root, "script.json");
  writeFileSync(script, JSON.stringify({ version: 1, name: "peer", entries }));
  return { root, work, script };
}

// Every dsh started, so that a failed scenario (which never closes its stdin) cannot keep
// the run alive: they are all killed once the tests are done.
const started = [];
after(() => started.forEach((child) => child.kill("SIGKILL")));

// With DSH_PEER_SESSIONS_URL set, every scenario keeps its sessions in that PostgreSQL
// database, each sandbox in a schema of its own.
function storeEnv(box) {
  const url = process.env.DSH_PEER_SESSIONS_URL;
  if (!url) return {};
  const schema = "peer_" + box.root.replace(/[^a-zA-Z0-9]/g, "").toLowerCase().slice(-20);
  return { DSH_SESSIONS_URL: url, DSH_SESSIONS_SCHEMA: schema };
}

function start(box, extra = [], sdk = { ndJsonStream }) {
  const child = spawn(
    BIN,
    ["--data-dir", join(box.root, "data"), "--replay", box.script, "acp", ...extra],
    {
      cwd: box.work,
      // Unconfined, a command asks in accept-edits mode, as these scenarios expect.
      env: {
        PATH: process.env.PATH,
        HOME: box.root,
        TERM: "dumb",
        DSH_SANDBOX: "full-access",
        ...storeEnv(box),
      },
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  started.push(child);
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const stream = sdk.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, stream, exited, stderr: () => stderr };
}

// A client that records every update and answers permission requests with `option`.
function peer(option = "allow_once", sdk = { client, methods }) {
  const updates = [];
  const asked = [];
  const app = sdk
    .client({ name: "dsh-peer-tests" })
    .onNotification(sdk.methods.client.session.update, ({ params }) => {
      updates.push(params);
    })
    .onRequest(sdk.methods.client.session.requestPermission, ({ params }) => {
      asked.push(params);
      return { outcome: { outcome: "selected", optionId: option } };
    });
  return { app, updates, asked };
}

async function handshake(ctx) {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: {},
  });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  return init;
}

async function finish(proc) {
  proc.child.stdin.end();
  const code = await proc.exited;
  assert.equal(code, 0, proc.stderr());
  assert.match(proc.stderr(), /agents=0 sessions=0/);
}

const text = (updates, kind) =>
  updates
    .filter((u) => u.update.sessionUpdate === kind)
    .map((u) => u.update.content.text)
    .join("");

test("a prompt streams its text and ends the turn", async () => {
  const box = sandbox([{ stream: [{ text: "Hello " }, { text: "from dsh" }], finish: "stop" }]);
  const proc = start(box, ["--permission", "allow"]);
  const { app, updates } = peer();
  await app.connectWith(proc.stream, async (ctx) => {
    await handshake(ctx);
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] });
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "hi" }],
    });
    assert.equal(response.stopReason, "end_turn");
    assert.equal(text(updates, "agent_message_chunk"), "Hello from dsh");
  });
  await finish(proc);
});

test("in ask mode an allowed bash card reaches completed", async () => {
  const box = sandbox([
    { stream: [{ tool_call: { name: "bash", arguments: { command: "echo peer" } } }] },
    { stream: [{ text: "done" }], finish: "stop" },
  ]);
  const proc = start(box);
  const { app, updates, asked } = peer("allow_once");
  await app.connectWith(proc.stream, async (ctx) => {
    await handshake(ctx);
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] });
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "go" }],
    });
    assert.equal(response.stopReason, "end_turn");
    assert.equal(asked.length, 1);
    assert.equal(asked[0].toolCall.title, "echo peer");
    // The command's output may arrive while it runs, in updates that carry no status.
    const statuses = updates
      .filter((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status)
      .map((u) => u.update.status);
    assert.deepEqual(statuses, ["in_progress", "completed"]);
  });
  await finish(proc);
});

test("leaving the sandbox asks even in allow mode, and the question carries the reason", async () => {
  const box = sandbox([
    {
      stream: [
        {
          tool_call: {
            name: "bash",
            arguments: { command: "touch ../outside", outside_sandbox: "the build writes beside the project" },
          },
        },
      ],
    },
    { stream: [{ text: "done" }], finish: "stop" },
  ]);
  // The sandbox asked for by name: these scenarios otherwise run unconfined.
  const proc = start(box, ["--sandbox", "workspace-write", "--permission", "allow"]);
  const { app, asked } = peer("allow_once");
  await app.connectWith(proc.stream, async (ctx) => {
    await handshake(ctx);
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] });
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "go" }],
    });
    assert.equal(response.stopReason, "end_turn");
    assert.equal(asked.length, 1, "allow mode still asks before leaving the sandbox");
    const shown = JSON.stringify(asked[0].toolCall.content);
    assert.ok(shown.includes("outside the sandbox: the build writes beside the project"), shown);
    assert.equal(asked[0].toolCall.rawInput.outside_sandbox, "the build writes beside the project");
  });
  await finish(proc);
  // Allowed once, it ran unconfined.
  assert.ok(existsSync(join(box.root, "outside")));
});

test("a cancelled prompt answers cancelled and the next prompt runs", async () => {
  const box = sandbox([
    { match: { last_user_contains: "wait" }, stream: [{ text: "partial" }], hang: true },
    { stream: [{ text: "next" }], finish: "stop" },
  ]);
  const proc = start(box, ["--permission", "allow"]);
  const { app, updates } = peer();
  await app.connectWith(proc.stream, async (ctx) => {
    await handshake(ctx);
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] });
    const pending = ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "wait" }],
    });
    // The session's commands come first; the prompt has started once its text streams.
    while (!updates.some((u) => u.update.sessionUpdate === "agent_message_chunk")) {
      await new Promise((r) => setImmediate(r));
    }
    await ctx.notify("session/cancel", { sessionId });
    assert.equal((await pending).stopReason, "cancelled");
    const again = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "again" }],
    });
    assert.equal(again.stopReason, "end_turn");
  });
  await finish(proc);
});

test("a load in a second process replays every update before its result", async () => {
  const box = sandbox([
    { stream: [{ reasoning: "thinking" }, { text: "answer" }], finish: "stop" },
    { stream: [{ text: "more" }], finish: "stop" },
  ]);
  let sessionId;
  {
    const proc = start(box, ["--permission", "allow"]);
    const { app } = peer();
    await app.connectWith(proc.stream, async (ctx) => {
      await handshake(ctx);
      ({ sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] }));
      await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hello" }] });
    });
    await finish(proc);
  }
  const proc = start(box, ["--permission", "allow"]);
  const { app, updates } = peer();
  await app.connectWith(proc.stream, async (ctx) => {
    await handshake(ctx);
    const result = await ctx.request(methods.agent.session.load, {
      sessionId,
      cwd: box.work,
      mcpServers: [],
    });
    assert.ok(result !== undefined);
    const kinds = updates.map((u) => u.update.sessionUpdate);
    // The usage of the model call comes back too: the editor's context ring is restored;
    // and the title the first prompt gave the session, right after that prompt.
    assert.deepEqual(kinds, [
      "user_message_chunk",
      "session_info_update",
      "agent_thought_chunk",
      "agent_message_chunk",
      "usage_update",
    ]);
    assert.equal(updates[1].update.title, "hello");
    const usage = updates[4].update;
    assert.ok(usage.used > 0 && usage.size > 0, JSON.stringify(usage));
    assert.equal(updates[0].update.content.text, "hello");
    assert.ok(updates.every((u) => u.sessionId === sessionId));
  });
  await finish(proc);
});

test("errors reach the client as RequestError with their codes", async () => {
  const box = sandbox([{ stream: [{ text: "x" }], finish: "stop" }]);
  const proc = start(box, ["--permission", "allow"]);
  const { app } = peer();
  await app.connectWith(proc.stream, async (ctx) => {
    await handshake(ctx);
    await assert.rejects(ctx.request("no/such_method", {}), (e) => e instanceof RequestError && e.code === -32601);
    await assert.rejects(
      ctx.request(methods.agent.session.prompt, { sessionId: "ghost", prompt: [{ type: "text", text: "x" }] }),
      (e) => e instanceof RequestError && e.code === -32002,
    );
  });
  await finish(proc);
});

test("a client's system prompt is advertised and accepted", async () => {
  const box = sandbox([{ stream: [{ text: "ok" }], finish: "stop" }]);
  const proc = start(box, ["--permission", "allow"]);
  const { app } = peer();
  await app.connectWith(proc.stream, async (ctx) => {
    const init = await handshake(ctx);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities.systemPrompt, { mode: { override: {} } });
    const { sessionId } = await ctx.request(methods.agent.session.new, {
      cwd: box.work,
      mcpServers: [],
      systemPrompt: { mode: "append", content: [{ type: "text", text: "Answer in French." }] },
    });
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "hi" }],
    });
    assert.equal(response.stopReason, "end_turn");
  });
  await finish(proc);
});

test("with fs offered, an edit reads and writes through the client and shows a diff", async () => {
  const box = sandbox([
    { stream: [{ tool_call: { name: "read", arguments: { path: "notes.txt" } } }] },
    {
      stream: [
        {
          tool_call: {
            name: "edit",
            arguments: { path: "notes.txt", old_string: "unsaved", new_string: "edited" },
          },
        },
      ],
    },
    { stream: [{ text: "done" }], finish: "stop" },
  ]);
  const notes = join(box.work, "notes.txt");
  writeFileSync(notes, "on disk\n");
  const buffers = new Map([[notes, "unsaved\n"]]);
  const proc = start(box);
  const { app, updates, asked } = peer("allow_once");
  app
    .onRequest(methods.client.fs.readTextFile, ({ params }) => ({ content: buffers.get(params.path) }))
    .onRequest(methods.client.fs.writeTextFile, ({ params }) => {
      buffers.set(params.path, params.content);
      return {};
    });
  await app.connectWith(proc.stream, async (ctx) => {
    const init = await ctx.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    });
    assert.equal(init.protocolVersion, 1);
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] });
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "go" }],
    });
    assert.equal(response.stopReason, "end_turn");
    assert.equal(buffers.get(notes), "edited\n");
    assert.equal(asked.length, 1);
    const diff = asked[0].toolCall.content.find((c) => c.type === "diff");
    assert.equal(diff.path, notes);
    assert.equal(diff.newText, "edited\n");
    const kinds = updates
      .filter((u) => u.update.sessionUpdate === "tool_call")
      .map((u) => u.update.kind);
    assert.deepEqual(kinds, ["read", "edit"]);
  });
  await finish(proc);
});

test("history, resume, close, delete and slash commands", async () => {
  const box = sandbox([
    { match: { last_user_contains: "hello" }, stream: [{ text: "hi" }], finish: "stop" },
    { match: { last_user_contains: "later" }, stream: [{ text: "later on" }], finish: "stop" },
    { stream: [{ text: "## Goal\nhello" }], finish: "stop" },
  ]);
  mkdirSync(join(box.work, ".dsh", "commands"), { recursive: true });
  writeFileSync(join(box.work, ".dsh", "commands", "greet.md"), "Say hello to $ARGUMENTS.\n");
  const first = start(box, ["--permission", "allow"]);
  const { app, updates } = peer();
  let sessionId;
  await app.connectWith(first.stream, async (ctx) => {
    const init = await handshake(ctx);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities.list, {});
    assert.deepEqual(init.agentCapabilities.sessionCapabilities.close, {});
    ({ sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] }));
    await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "hello" }],
    });
    const commands = updates.find((u) => u.update.sessionUpdate === "available_commands_update");
    assert.deepEqual(
      commands.update.availableCommands.map((c) => c.name),
      ["compact", "init", "greet"],
    );
    const compacted = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "/compact" }],
    });
    assert.equal(compacted.stopReason, "end_turn");
    const listed = await ctx.request(methods.agent.session.list, { cwd: box.work });
    assert.deepEqual(listed.sessions.map((s) => s.sessionId), [sessionId]);
    assert.ok(listed.sessions[0].updatedAt);
    await ctx.request(methods.agent.session.close, { sessionId });
    // Deleting a session that never existed succeeds, as the protocol asks.
    await ctx.request(methods.agent.session.delete, { sessionId: "01a24000-0000-7000-8000-000000000000" });
  });
  await finish(first);

  const second = start(box, ["--permission", "allow"]);
  const other = peer();
  await other.app.connectWith(second.stream, async (ctx) => {
    await handshake(ctx);
    await ctx.request(methods.agent.session.resume, { sessionId, cwd: box.work, mcpServers: [] });
    assert.ok(
      !other.updates.some((u) => u.update.sessionUpdate === "user_message_chunk"),
      "a resume replays nothing",
    );
    const answer = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "later" }],
    });
    assert.equal(answer.stopReason, "end_turn");
    await ctx.request(methods.agent.session.close, { sessionId });
    await ctx.request(methods.agent.session.delete, { sessionId });
    const listed = await ctx.request(methods.agent.session.list, {});
    assert.deepEqual(listed.sessions, []);
  });
  await finish(second);
});

test("titles, pickers and plans", async () => {
  const box = sandbox([
    {
      stream: [
        {
          tool_call: {
            name: "todo",
            arguments: {
              todos: [
                { content: "look", status: "completed" },
                { content: "write", status: "in_progress" },
              ],
            },
          },
        },
      ],
    },
    {
      stream: [{ tool_call: { name: "write", arguments: { path: "made.txt", content: "x\n" } } }],
    },
    { stream: [{ tool_call: { name: "bash", arguments: { command: "echo ran" } } }] },
    { stream: [{ text: "done" }], finish: "stop" },
  ]);
  const proc = start(box);
  const { app, updates, asked } = peer();
  await app.connectWith(proc.stream, async (ctx) => {
    // This client's stable schema has no `plan_update`, so it does not advertise `plan`:
    // dsh must send it `plan` updates only.
    await handshake(ctx);
    const created = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] });
    const { sessionId } = created;
    const ids = created.configOptions.map((o) => o.id);
    assert.deepEqual(ids, ["model", "thought_level", "mode"]);
    assert.equal(created.configOptions[0].category, "model");
    assert.equal(created.modes.currentModeId, "ask");
    const changed = await ctx.request(methods.agent.session.setConfigOption, {
      sessionId,
      configId: "mode",
      value: "accept-edits",
    });
    assert.equal(changed.configOptions.find((o) => o.id === "mode").currentValue, "accept-edits");
    await assert.rejects(
      ctx.request(methods.agent.session.setMode, { sessionId, modeId: "nope" }),
      (err) => err instanceof RequestError && err.code === -32602,
    );
    const answer = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "Plan the work\nthen do it" }],
    });
    assert.equal(answer.stopReason, "end_turn");
    // accept-edits: the edit ran unasked, the command asked.
    assert.equal(asked.length, 1);
    assert.equal(asked[0].toolCall.title, "echo ran");
    const kinds = updates.map((u) => u.update.sessionUpdate);
    assert.ok(kinds.includes("current_mode_update"), kinds.join());
    const title = updates.find((u) => u.update.sessionUpdate === "session_info_update");
    assert.equal(title.update.title, "Plan the work");
    const plan = updates.find((u) => u.update.sessionUpdate === "plan");
    assert.deepEqual(
      plan.update.entries.map((e) => [e.content, e.status]),
      [
        ["look", "completed"],
        ["write", "in_progress"],
      ],
    );
    assert.ok(!kinds.includes("plan_update"), kinds.join());
    const listed = await ctx.request(methods.agent.session.list, { cwd: box.work });
    assert.equal(listed.sessions[0].title, "Plan the work");
  });
  await finish(proc);
});

test("an editor's MCP server gives its session tools, read-only ones unasked", async () => {
  const server = process.env.DSH_MCP_FAULT_SERVER;
  assert.ok(server, "DSH_MCP_FAULT_SERVER names the in-repo MCP test server");
  const box = sandbox([
    { stream: [{ tool_call: { name: "faults__echo", arguments: { text: "from the MCP server" } } }] },
    { stream: [{ tool_call: { name: "faults__huge", arguments: { bytes: 10 } } }] },
    { stream: [{ text: "done" }], finish: "stop" },
  ]);
  const proc = start(box);
  const { app, updates, asked } = peer("allow_once");
  await app.connectWith(proc.stream, async (ctx) => {
    const init = await handshake(ctx);
    assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: false });
    const { sessionId } = await ctx.request(methods.agent.session.new, {
      cwd: box.work,
      mcpServers: [{ name: "faults", command: server, args: [], env: [] }],
    });
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "go" }],
    });
    assert.equal(response.stopReason, "end_turn");
    // Ask mode: the tool the server marks read-only ran unasked; the other one asked.
    assert.equal(asked.length, 1);
    assert.match(asked[0].toolCall.title, /^faults: huge/);
    const calls = updates.filter((u) => u.update.sessionUpdate === "tool_call");
    assert.match(calls[0].update.title, /^faults: echo/);
    assert.equal(calls[0].update.kind, "read");
    const results = JSON.stringify(
      updates.filter((u) => u.update.sessionUpdate === "tool_call_update"),
    );
    assert.match(results, /from the MCP server/);
    await ctx.request(methods.agent.session.close, { sessionId });
  });
  await finish(proc);
});

// A parent hands one task to a child, which runs a command (asked about) and answers.
function delegation() {
  return sandbox([
    { stream: [{ tool_call: { name: "task", arguments: { description: "check files", prompt: "look around" } } }] },
    { stream: [{ tool_call: { name: "bash", arguments: { command: "echo child" } } }] },
    { stream: [{ text: "child answer" }], finish: "stop" },
    { stream: [{ text: "parent done" }], finish: "stop" },
  ]);
}

test("a client showing subagents gets the child as a session of its own", async () => {
  const box = delegation();
  const proc = start(box, [], unstable);
  const { app, updates, asked } = peer("allow_once", unstable);
  await app.connectWith(proc.stream, async (ctx) => {
    await ctx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: { subagents: {} } });
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] });
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "delegate" }],
    });
    assert.equal(response.stopReason, "end_turn");
    const announced = updates.filter((u) => u.update.sessionUpdate === "subagent_update");
    assert.ok(announced.length >= 2, JSON.stringify(announced));
    assert.ok(announced.every((u) => u.sessionId === sessionId), "announced on the parent");
    const child = announced[0].update.sessionId;
    assert.notEqual(child, sessionId);
    assert.equal(announced[0].update.title, "check files");
    assert.equal(announced[0].update.state.state, "running");
    assert.deepEqual(announced.at(-1).update.state, { state: "idle", stopReason: "end_turn" });
    // The child's own updates come under its id, before it is idle.
    const own = updates.filter((u) => u.sessionId === child);
    assert.ok(own.some((u) => u.update.sessionUpdate === "tool_call" && u.update.title === "echo child"));
    assert.equal(text(own, "agent_message_chunk"), "child answer");
    assert.ok(updates.indexOf(own.at(-1)) < updates.indexOf(announced.at(-1)));
    // Its question names its session. (The task card's link to it, a `session` content
    // block, is checked on the wire by tests/tests/acp_subagents.rs: this client version
    // drops content types it does not know.)
    assert.equal(asked.length, 1);
    assert.equal(asked[0].sessionId, child);
    assert.equal(text(updates.filter((u) => u.sessionId === sessionId), "agent_message_chunk"), "parent done");
  });
  await finish(proc);
});

test("a client not showing subagents sees the child's work in the task card", async () => {
  const box = delegation();
  const proc = start(box);
  const { app, updates, asked } = peer("allow_once");
  await app.connectWith(proc.stream, async (ctx) => {
    await handshake(ctx);
    const { sessionId } = await ctx.request(methods.agent.session.new, { cwd: box.work, mcpServers: [] });
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "delegate" }],
    });
    assert.equal(response.stopReason, "end_turn");
    assert.ok(updates.every((u) => u.sessionId === sessionId), "nothing of another session");
    assert.ok(!updates.some((u) => u.update.sessionUpdate === "subagent_update"));
    const card = updates.find((u) => u.update.sessionUpdate === "tool_call").update.toolCallId;
    const progress = updates
      .filter((u) => u.update.toolCallId === card && u.update.content)
      .map((u) => JSON.stringify(u.update.content));
    assert.ok(progress.some((c) => c.includes("↳ check files · $ echo child")), progress.join("\n"));
    // The child's call is announced in the parent's session, named for the child, and
    // asked about there.
    assert.equal(asked.length, 1);
    assert.equal(asked[0].sessionId, sessionId);
    const proxy = asked[0].toolCall.toolCallId;
    assert.ok(proxy.startsWith(`${card}/`), proxy);
    const statuses = updates.filter((u) => u.update.toolCallId === proxy).map((u) => u.update.status);
    assert.equal(statuses[0] ?? "pending", "pending", "announced waiting");
    assert.equal(statuses.at(-1), "completed");
    assert.ok(asked[0].toolCall.title.startsWith("Subagent \u201ccheck files\u201d: "), asked[0].toolCall.title);
    const result = updates.filter((u) => u.update.toolCallId === card && u.update.status === "completed");
    assert.ok(JSON.stringify(result).includes("child answer"), JSON.stringify(result));
  });
  await finish(proc);
});
