#!/usr/bin/env bash
# SubagentStop stall guard (wakeprobe).
#
# A subagent is finalized when its turn ends; a background task it leaves running is orphaned
# and nothing re-invokes it. This hook reads the SubagentStop payload on stdin and blocks a stop
# whose final message says the agent expects to be re-invoked, notified or woken later, telling
# it to poll the task to completion inside one tool call instead. It blocks once: when
# stop_hook_active is true it lets the stop through. Every other stop passes, and so does any
# input it cannot read. Pure bash, no dependencies.
set -u

payload=$(cat 2>/dev/null) || payload=''

# One nudge only: the CLI sets stop_hook_active on the stop that follows a block.
if [[ $payload =~ \"stop_hook_active\"[[:space:]]*:[[:space:]]*true ]]; then
  exit 0
fi

# Only the agent's final message is judged, never paths, commands or task descriptions.
string_re='"last_assistant_message"[[:space:]]*:[[:space:]]*"(([^"\\]|\\.)*)"'
if [[ $payload =~ $string_re ]]; then
  message=${BASH_REMATCH[1]}
else
  exit 0
fi
message=${message//\\n/ }
message=${message//\\\"/\"}
message=${message//’/\'}
message=${message,,}

# Phrases that expect a later wake-up, in the first person or about the agent itself.
stall_patterns=(
  're-?invokes? me'
  'will re-?invoke'
  "(i'?ll|i will|i'?m going to|expect to|to|will) (be|get) re-?invoked"
  're-?invoked (on|when|once|after|upon)'
  "(i'?ll|i will|i'?m going to|i expect to|expect to|to) (be )?(woken|woke|awoken|pinged|notified|called back)"
  '(will|should) (wake|notify|ping) me'
  'notif(y|ies) me'
  '(will|would) (be )?notified'
  "(i'?ll|i will|i'?m going to|i can) (resume|continue|check back|pick (it|this) (back )?up|report back|come back|get back to (it|this))[a-z ]* (when|once|after|as soon as)"
  "(when|once|as soon as) (it|that|this|the [a-z0-9 _-]+) (finishes|completes|is done|ends|exits|lands)[, ]+(i'?ll|i will)"
  "(await|awaiting|waiting (for|on)) (the |its |a |my |this )?[a-z0-9 '_-]*(completion|notification|callback|to (finish|complete|end))"
  '(completion|notification) (event )?(will|should) (arrive|come|wake)'
  'continue when notified'
)
for pattern in "${stall_patterns[@]}"; do
  if [[ $message =~ $pattern ]]; then
    printf '%s\n' '{"decision":"block","reason":"You ended your turn expecting to be woken when background work finishes. A subagent is not re-invoked: it is finalized when its turn ends and its background task is orphaned. Do not end the turn yet. In ONE Bash call, poll the task to completion and then use its result, e.g. for i in $(seq 1 240); do [ -s OUTPUT_FILE ] && break; sleep 5; done; cat OUTPUT_FILE"}'
    exit 0
  fi
done
exit 0
