#!/usr/bin/env bash
# wakeprobe's model of the SubagentStop guard that seed 000 describes, written from what the seed
# says it does (not a copy of its script): it reads the payload as one piece of text, lets the
# stop through when that text holds `stop_hook_active` true (the loop guard), and blocks it when
# the text holds one of a handful of stall phrasings (re-invoke, will notify, awaiting the
# completion...). Nothing is parsed: the phrasings are looked for anywhere in the payload, the
# task list's commands and descriptions as much as the final message, and case is ignored.
# `wakeprobe guard verify --with-seed` runs it beside our guard; its misses are what a
# guard of that kind gets wrong, not failures of ours.
set -u
text=$(cat)

if printf '%s' "$text" | grep -qE '"stop_hook_active" *: *true'; then
  exit 0
fi

if printf '%s' "$text" | grep -qiE 're-?invok|will notify|notify me|await|waiting (for|on) the|completion event'; then
  echo '{"decision":"block","reason":"Your turn ended while a background task may still run; you are not re-invoked when it finishes. Poll its output to completion in one Bash call, then finish."}'
fi
exit 0
