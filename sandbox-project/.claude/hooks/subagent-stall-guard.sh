#!/usr/bin/env bash
# SubagentStop stall guard (wakeprobe).
#
# A subagent is finalized when its turn ends; a background task it leaves running is orphaned
# and nothing re-invokes it. This hook reads the SubagentStop payload on stdin and blocks a stop
# whose final message says the agent expects to be re-invoked, notified or woken, telling it to
# poll the task to completion inside one tool call instead. It blocks once: when
# stop_hook_active is true it lets the stop through. Every other stop passes. Pure bash.
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
message=${message,,}

stall_patterns=(
  're-?invok(e|ed|es|ing)'
  '(will|would|should|to) (be )?(woken|woke|awoken|pinged|notified|called back)'
  'notif(y|ies) me'
  '(will|would) notify'
  "(i'?ll|i will|i'?m going to) (be )?(resume|continue|check back|pick (it|this) (back )?up|report back) (when|once|after)"
  '(await|awaiting|waiting (for|on)|wait (for|on)) (the |its |a |my |this )?[a-z0-9 _-]*(completion|notification|event|callback|signal|monitor|to (finish|complete|end))'
  '(when|once) (it|that|this|the [a-z0-9 _-]+) (finishes|completes|is done|ends|exits)[, ]+(i|i'"'"'ll|i will) (will )?(be )?(resume|continue|report|pick|get|notified|woken)'
  'completion (event|notification) (will|should) (arrive|come|wake)'
  '(come|get) back to (you|this|it) (when|once|after)'
)
for pattern in "${stall_patterns[@]}"; do
  if [[ $message =~ $pattern ]]; then
    printf '%s\n' '{"decision":"block","reason":"You ended your turn expecting to be woken when background work finishes. A subagent is not re-invoked: it is finalized when its turn ends and its background task is orphaned. Do not end the turn yet. In ONE Bash call, poll the task to completion and then use its result, e.g. for i in $(seq 1 240); do [ -s OUTPUT_FILE ] && break; sleep 5; done; cat OUTPUT_FILE"}'
    exit 0
  fi
done
exit 0
