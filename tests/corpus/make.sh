#!/usr/bin/env bash
# Remakes the stored sessions the golden tests replay (tests/tests/golden.rs) with the built
# `dsh` and its scripted offline model. Run it only to change the corpus on purpose: the
# goldens exist to show that a change to the front ends leaves what they print alone.
#
#   cargo build -p dsh && tests/corpus/make.sh
#
# Each log's directory is rewritten to /home/user/project, so the files do not depend on
# where they were made.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dsh=${DSH:-$here/../../target/debug/dsh}
everything=$here/../mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
work=$tmp/project
mkdir -p "$work" "$tmp/scripts"
export XDG_DATA_HOME=$tmp/xdg DSH_CONFIG=$tmp/config.toml NO_COLOR=1
DSH_DATA_DIR=$XDG_DATA_HOME/dsh
: > "$DSH_CONFIG"

# Runs dsh; its output is shown only when it fails (a `!` first: when it succeeds).
run() {
  local want=0
  if [ "$1" = "!" ]; then want=1; shift; fi
  local code=0
  "$dsh" "$@" > "$tmp/out" 2>&1 || code=$?
  if { [ $want = 0 ] && [ $code != 0 ]; } || { [ $want = 1 ] && [ $code = 0 ]; }; then
    cat "$tmp/out" >&2
    echo "dsh $* exited $code" >&2
    exit 1
  fi
}

script() { printf '%s' "$2" > "$tmp/scripts/$1.json"; echo "$tmp/scripts/$1.json"; }

# One session per name: the newest log is moved out as <name>.jsonl.
keep() {
  local log
  log=$(ls -t "$DSH_DATA_DIR"/sessions/*/*.jsonl | grep -v '/\.index' | head -1)
  sed "s#$work#/home/user/project#g" "$log" > "$here/$1.jsonl"
  rm -f "$log" "$DSH_DATA_DIR"/sessions/*/.index.jsonl
}

cd "$work"
printf 'x\n' > notes.txt

# The demo: reasoning, commands, a read, an edit with its diff, the answer.
run run --replay demo look
keep demo

# A plan updated twice, with an answer between.
run run --replay "$(script plan '{"version":1,"name":"plan","entries":[
 {"stream":[{"text":"Planning."},{"tool_call":{"name":"todo","arguments":{"todos":[
   {"content":"read the code","status":"in_progress"},{"content":"fix it","status":"pending"}]}}}]},
 {"stream":[{"tool_call":{"name":"todo","arguments":{"todos":[
   {"content":"read the code","status":"completed"},{"content":"fix it","status":"in_progress"}]}}}]},
 {"stream":[{"text":"Done with the plan."}],"finish":"stop","usage":{"input_tokens":1200,"output_tokens":30,"cache_hit_tokens":1000}}]}')" plan
keep plan

# A failed turn: a command that fails, a missing file, a tool that does not exist, and a
# server error that ends the turn.
run ! run --replay "$(script failed '{"version":1,"name":"failed","entries":[
 {"stream":[{"tool_call":{"name":"bash","arguments":{"command":"printf \"out\\033[2J\\033]52;c;aGk=\\007\\n\"; echo err >&2; exit 3","description":"fail on purpose"}}},
            {"tool_call":{"name":"read","arguments":{"path":"missing.txt"}}},
            {"tool_call":{"name":"nosuch\u001b]2;pwned\u0007","arguments":{}}}]},
 {"error":{"kind":"server","message":"upstream overloaded","status":503}}]}')" fail
keep failed

# A cancelled turn: SIGINT while a command runs.
"$dsh" run --replay "$(script cancel '{"version":1,"name":"cancel","entries":[
 {"stream":[{"text":"Waiting."},{"tool_call":{"name":"bash","arguments":{"command":"echo started; sleep 30"}}}]}]}')" wait > "$tmp/out" 2>&1 &
pid=$!
until grep -q started "$tmp/out" 2>/dev/null; do sleep 0.1; done
kill -INT $pid
wait $pid || true
keep cancelled

# A write that creates a file, a grep and a glob, then a compaction asked for, then a prompt.
run run --replay "$(script files '{"version":1,"name":"files","entries":[
 {"stream":[{"tool_call":{"name":"write","arguments":{"path":"src/lib.rs","content":"pub fn one() -> u32 {\n    1\n}\n"}}}]},
 {"stream":[{"tool_call":{"name":"grep","arguments":{"pattern":"fn one","path":"src"}}},
            {"tool_call":{"name":"glob","arguments":{"pattern":"**/*.rs"}}}]},
 {"stream":[{"text":"Wrote src/lib.rs."}],"finish":"stop"}]}')" write
run run -c --replay "$(script summary '{"version":1,"name":"summary","entries":[
 {"match":{"any_contains":"summar"},"stream":[{"text":"The user asked for src/lib.rs; it was written."}],"finish":"stop"},
 {"stream":[{"text":"Still here."}],"finish":"stop"}]}')" --compact "and now?"
keep compaction

# An MCP server's tools.
if [ -f "$everything" ]; then
  printf '[mcp_servers.everything]\ncommand = "node"\nargs = ["%s"]\n' "$everything" > "$DSH_CONFIG"
  run run --replay "$(script mcp '{"version":1,"name":"mcp","entries":[
   {"stream":[{"tool_call":{"name":"everything__echo","arguments":{"message":"hello over MCP"}}}]},
   {"stream":[{"tool_call":{"name":"everything__get-sum","arguments":{"a":20,"b":22}}}]},
   {"stream":[{"text":"42."}],"finish":"stop"}]}')" sum
  keep mcp
  : > "$DSH_CONFIG"
else
  echo "the MCP reference server is missing: run npm ci in tests/mcp-servers" >&2
  exit 1
fi
ls -la "$here"
