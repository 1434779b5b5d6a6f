#!/usr/bin/env bash
# SubagentStop stall guard (wakeprobe).
#
# A subagent is finalized when its turn ends; background work it leaves running is orphaned and
# nothing re-invokes it. This hook reads the SubagentStop payload on stdin and blocks the stop
# once (`{"decision":"block","reason":...}`) when the agent would leave live work behind:
#
# 1. Structure first. Where the payload has `background_tasks` (Claude Code 2.1.145 and later),
#    the stop is blocked when an entry is `running`, is not the stopping agent itself, and was
#    started by this agent, whatever its last message says. The list is session-wide (the main
#    agent's and other subagents' work is there too, with no owner field), so ownership comes
#    from the agent's own transcript (`agent_transcript_path`): the agent started a task when
#    the task's id appears in one of its tool results ("Command running in background with ID:
#    b6fpiu52d. ..."). The reason names each task and how to wait for it in one tool call.
#    Where the transcript cannot be read (`--no-session-persistence` and the Agent SDK's
#    `persistSession: false` write none, yet the payload names one), the payload alone decides:
#    some work of the session is `running` and the final message expects a wake-up (the phrases
#    of 2), so the stop is blocked once, naming the running work. A neutral message then passes:
#    the payload has no owner field to tell the agent's work from others'.
# 2. Words as a fallback. Where the payload has no `background_tasks` (2.1.144 and older), the
#    final message is matched against phrases that expect a later wake-up ("the run will
#    re-invoke me", "I'll be notified when it finishes"), on word boundaries and with curly
#    apostrophes read as straight ones.
#
# It lets the stop through when `stop_hook_active` is true (one nudge only), when the agent's
# work is done, and on input that is not a JSON object. It always exits 0.
#
# Why pure bash: the hook must run on a fresh machine, where jq, python or our own binary may be
# missing, and a hook that cannot start lets every stall through unnoticed. Bash's own string
# operations split the payload on its unescaped quotes and a small state machine walks the JSON
# structure, so paths, commands and messages that contain quotes, braces or key names cannot
# fool it. The transcript (JSONL, possibly many MB) is searched with `grep -F`, present wherever
# bash is. A decision takes a few milliseconds (up to two seconds while it waits for a
# transcript the CLI has not written yet). Written for bash 3.2 (macOS) and later, tested on 5.2.
set -u
export LC_ALL=C

payload=$(cat 2>/dev/null) || payload=''

# --- A small JSON reader ------------------------------------------------------------------------
# Reads the top-level object and, inside `background_tasks`, each task object. Strings are kept
# in their escaped form, with every `\\` and `\"` set aside as one byte (US and RS), so that each
# remaining quote delimits a string. Sets: top_<key> for the keys below, tasks_present, and per
# task the arrays task_id, task_type, task_status, task_desc, task_cmd. Returns 1 on input that
# is not one well-formed JSON object.
BS=$'\037' # stands for an escaped backslash
QT=$'\036' # stands for an escaped quote
top_stop_hook_active='' top_agent_id='' top_agent_transcript_path='' top_last_assistant_message=''
has_message=0 tasks_present=0
task_id=() task_type=() task_status=() task_desc=() task_cmd=()

record() { # record KIND VALUE: a string (s) or literal (l) value at the current position
  local depth=${#stack}
  if ((depth == 1)); then
    case $key1 in
    stop_hook_active) top_stop_hook_active=$1:$2 ;;
    agent_id) [[ $1 == s ]] && top_agent_id=$2 ;;
    agent_transcript_path) [[ $1 == s ]] && top_agent_transcript_path=$2 ;;
    last_assistant_message) [[ $1 == s ]] && top_last_assistant_message=$2 && has_message=1 ;;
    esac
  elif ((depth == 3)) && [[ $stack == '{[{' && $key1 == background_tasks && $1 == s ]]; then
    case $key3 in
    id) task_id[ti]=$2 ;;
    type) task_type[ti]=$2 ;;
    status) task_status[ti]=$2 ;;
    description) task_desc[ti]=$2 ;;
    command) task_cmd[ti]=$2 ;;
    esac
  fi
}

parse_json() {
  local s=$1 parts words seg i n c expect=value done=0 literal_re
  literal_re='^(true|false|null|-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)$'
  [[ $s == *[$BS$QT]* ]] && return 1
  s=${s//\\\\/$BS}
  s=${s//\\\"/$QT}
  local IFS='"'
  set -f
  # shellcheck disable=SC2206 # splitting on quotes is the point; globbing is off
  parts=($s)
  set +f
  n=${#parts[@]}
  stack='' key1='' key3='' ti=-1
  for ((i = 0; i < n; i++)); do
    if ((i % 2)); then # a string
      ((done)) && return 1
      case $expect in
      key | key_or_close)
        ((${#stack} == 1)) && key1=${parts[i]}
        ((${#stack} == 3)) && key3=${parts[i]}
        expect='colon'
        ;;
      value | value_or_close)
        record s "${parts[i]}"
        expect=comma
        ;;
      *) return 1 ;;
      esac
      continue
    fi
    # Between strings: structure and literals, one word each once spaced apart.
    seg=${parts[i]}
    for c in '{' '}' '[' ']' ':' ','; do seg=${seg//"$c"/ $c }; done
    IFS=$' \t\n\r'
    set -f
    # shellcheck disable=SC2206
    words=($seg)
    set +f
    IFS='"'
    for c in ${words[@]+"${words[@]}"}; do
      ((done)) && return 1
      case $c in
      '{' | '[')
        [[ $expect == value || $expect == value_or_close ]] || return 1
        [[ -z $stack && $c == '[' ]] && return 1 # the payload is an object
        stack+=$c
        if [[ $c == '{' ]]; then
          expect=key_or_close
          [[ $stack == '{[{' && $key1 == background_tasks ]] && ti=$((ti + 1)) && key3=''
        else
          expect=value_or_close
          [[ $stack == '{[' && $key1 == background_tasks ]] && tasks_present=1
        fi
        ;;
      '}' | ']')
        if [[ $c == '}' ]]; then
          [[ ${stack: -1} == '{' && ($expect == key_or_close || $expect == comma) ]] || return 1
        else
          [[ ${stack: -1} == '[' && ($expect == value_or_close || $expect == comma) ]] || return 1
        fi
        stack=${stack%?}
        expect=comma
        [[ -z $stack ]] && done=1
        ;;
      :)
        [[ $expect == colon ]] || return 1
        expect=value
        ;;
      ,)
        [[ $expect == comma && -n $stack ]] || return 1
        if [[ ${stack: -1} == '{' ]]; then expect=key; else expect=value; fi
        ;;
      *)
        [[ $expect == value || $expect == value_or_close ]] || return 1
        [[ $c =~ $literal_re ]] || return 1
        record l "$c"
        expect=comma
        ;;
      esac
    done
  done
  # Closed: an unterminated string swallows the rest, so nothing can close after it.
  ((done))
}

# A string value as text: escapes decoded, curly apostrophes read as straight ones, newlines
# and tabs as spaces.
text_of() {
  local t=$1
  t=${t//\\n/ }
  t=${t//\\t/ }
  t=${t//\\r/ }
  t=${t//\\\//\/}
  t=${t//\\u0027/\'}
  t=${t//\\u2019/\'}
  t=${t//\\u2018/\'}
  t=${t//’/\'}
  t=${t//‘/\'}
  t=${t//$BS/\\}
  t=${t//$QT/\"}
  printf '%s' "$t"
}

# A string value back in JSON-escaped form (to be embedded in our answer or searched for in the
# transcript), at most LIMIT bytes: cut before a partial UTF-8 character or escape sequence.
escaped_prefix() {
  local t=$1 limit=$2
  if ((${#t} > limit)); then
    t=${t:0:limit}
    # shellcheck disable=SC2101 # the class is inside the outer brackets, beside two bytes
    while [[ -n $t && ${t: -1} != [[:print:]$BS$QT] ]]; do t=${t%?}; done
    [[ $t =~ \\(u[0-9a-fA-F]{0,3})?$ ]] && t=${t%"${BASH_REMATCH[0]}"}
  fi
  t=${t//$BS/\\\\}
  t=${t//$QT/\\\"}
  printf '%s' "$t"
}

# The same for a short label in the reason: 160 bytes, with "..." where it was cut.
json_of() {
  local t
  t=$(escaped_prefix "$1" 160)
  ((${#1} > 160)) && t+='...'
  printf '%s' "$t"
}

block() {
  printf '{"decision":"block","reason":"%s"}\n' "$1"
  exit 0
}

parse_json "$payload" || exit 0

# One nudge only: the CLI sets stop_hook_active on the stop that follows a block.
[[ $top_stop_hook_active == l:true ]] && exit 0

# --- Words: a final message that expects a later wake-up ------------------------------------------
# Phrases that expect to be woken ("the run will re-invoke me", "I'll be notified when it
# finishes"), on word boundaries and with curly apostrophes read as straight ones. Returns 0 when
# the final message is one.
stall_words() {
  ((has_message)) || return 1
  local message pattern B I stall_patterns
  message=$(text_of "$top_last_assistant_message")
  B='(^|[^a-z0-9_])' # a word starts here: no match inside "will", "ci will", "renotify"
  I="(i'll|i will|we'll|we will|i'm going to|i am going to|i expect to|we expect to|i should|we should)"
  stall_patterns=(
    "re-?invoke[sd]? (me|us)([^a-z0-9_]|$)"
    "${B}${I} (be|get) re-?invoked"
    "${B}${I} (be )?(woken|woke|awoken|pinged|notified|called back)"
    "(will|should|would) (wake|notify|ping|re-?invoke) (me|us)([^a-z0-9_]|$)"
    "${B}notif(y|ies) (me|us)([^a-z0-9_]|$)"
    "${B}(i'll|i will|we'll|we will|i'm going to|i can) (resume|continue|check back|pick (it|this|that) (back )?up|report back|come back|get back to (it|this))[a-z ]* (when|once|after|as soon as)"
    "${B}(when|once|as soon as) (it|that|this|the [a-z0-9 _-]+) (finishes|completes|is done|ends|exits|lands)[, ]+(i'll|i will|we'll)([^a-z0-9_]|$)"
    "${B}(await|awaiting|waiting (for|on)) (the |its |a |my |this )?[a-z0-9 '_-]*(completion|notification|callback|to (finish|complete|end))"
    "${B}(completion|notification) (event )?(will|should) (arrive|come|wake)"
    "${B}(continue|resume|proceed) (when|once|after) (notified|woken|pinged|re-?invoked)"
  )
  shopt -s nocasematch
  for pattern in "${stall_patterns[@]}"; do
    if [[ $message =~ $pattern ]]; then
      shopt -u nocasematch
      return 0
    fi
  done
  shopt -u nocasematch
  return 1
}

# --- The reason: the tasks by name, and how to wait for them in one call -------------------------
# name_tasks RESULTS INDEX...: sets `named` (each task's id, type and description) and `how`
# (a one-call wait for the shells, where RESULTS, the agent's tool results, may name their output
# files; a word on the other kinds).
name_tasks() {
  local results=$1 i id what kind output s waits='' reads='' others=0 shells=()
  shift
  named='' how=''
  for i in "$@"; do
    id=${task_id[i]}
    what=${task_desc[i]-}
    [[ -n $what ]] || what=${task_cmd[i]-}
    kind=${task_type[i]-task}
    named+="${named:+; }\`$(json_of "$id")\` ($(json_of "$kind")${what:+: $(json_of "$what")})"
    if [[ $kind == shell ]]; then
      output=''
      [[ $results =~ written\ to:\ ([^\"$BS$QT]*/$id\.output) ]] && output=${BASH_REMATCH[1]}
      shells+=("$id:$output")
    else
      others=1
    fi
  done
  if ((${#shells[@]})); then
    for s in "${shells[@]}"; do
      id=${s%%:*} output=${s#*:}
      waits+=" -e /$id.output"
      reads+=" ${output:-<the output file of $id>}"
    done
    how+="In ONE foreground Bash call (timeout 600000), wait until it has ended, then read its output: for i in \$(seq 1 115); do ls -l /proc/[0-9]*/fd 2>/dev/null | grep -qF$waits || break; sleep 5; done; tail -n 50$reads (on Linux: the command holds its output file open until it exits). "
  fi
  if ((others)); then
    how+="For a subagent, monitor or teammate, stay live until it reports: its <task-notification> reaches you at your next tool step after it ends. "
  fi
}

# --- 1. Structure: the agent's own live work -----------------------------------------------------
if ((tasks_present)); then
  live=()
  for i in ${task_id[@]+"${!task_id[@]}"}; do
    id=${task_id[i]}
    [[ ${task_status[i]-} == running && $id =~ ^[A-Za-z0-9_-]+$ && $id != "$top_agent_id" ]] || continue
    live+=("$i")
  done
  ((${#live[@]})) || exit 0
  transcript=$(text_of "$top_agent_transcript_path")
  if [[ -z $transcript || ! -f $transcript || ! -r $transcript ]]; then
    # No transcript to tell whose work runs: none is written with `--no-session-persistence`
    # (the Agent SDK's `persistSession: false`), yet the payload still names the file. The
    # payload itself must then decide, and on 2.1.332 it says nothing of owners (no such field
    # in `background_tasks`): work is running in the session and the final message expects a
    # wake-up, so the stop is a stall as far as anything here can see. Blocked once, naming the
    # running work; a neutral message is let through, as nothing tells its work from others'.
    stall_words || exit 0
    name_tasks '' "${live[@]}"
    # Which of them is the agent's is not known here: the wait is spelled for one id it fills in.
    how="For a shell command of yours, in ONE foreground Bash call (timeout 600000), wait until it has ended, then read its output: for i in \$(seq 1 115); do ls -l /proc/[0-9]*/fd 2>/dev/null | grep -qF -e /ID.output || break; sleep 5; done; tail -n 50 OUTPUT_FILE (ID: its id above; OUTPUT_FILE: the file named when it started; on Linux the command holds that file open until it exits). For a subagent, monitor or teammate, stay live until it reports: its <task-notification> reaches you at your next tool step after it ends. "
    block "You ended your turn expecting to be woken when background work finishes. This session still has work running: $named. A subagent that ends its turn is finalized: work it started would be orphaned, and nothing may wake you when it ends. If any of this work is yours, do not end your turn yet. ${how}Then finish with its result. If none of it is yours, end your turn again with your result: the stop is blocked once only."
  fi
  patterns=()
  for i in "${live[@]}"; do patterns+=(-e "${task_id[i]}"); done
  # The agent's tool results that name a live task: those tasks are its own. The CLI writes the
  # transcript a moment after the fact (the hook can run before the tool result that started a
  # task is on disk), so until the transcript holds the agent's last message, look again (for
  # at most two seconds by the clock where bash has one, and 20 rounds; only while work of
  # others is running). A bound by rounds alone ran short on a busy machine. The last message is
  # looked for before the tool results: the transcript only grows and the message comes after
  # them, so a read of the results that follows a read that saw the message sees them all (the
  # other order let a write land between the two reads and the work go unseen).
  marker=$(escaped_prefix "$top_last_assistant_message" 60)
  now_us() { local t=${EPOCHREALTIME:-0}; echo "${t/[.,]/}"; }
  deadline=$(( $(now_us) + 2000000 ))
  for _ in {1..20}; do
    settled=1
    [[ -z $marker ]] || command grep -qF -e "$marker" -- "$transcript" 2>/dev/null || settled=0
    results=$(command grep -F -e '"tool_result"' -- "$transcript" 2>/dev/null | command grep -wF "${patterns[@]}" 2>/dev/null)
    if [[ -n $results ]] || ((settled)); then break; fi
    (( $(now_us) < deadline )) || break
    sleep 0.1 2>/dev/null || break
  done
  [[ -n $results ]] || exit 0
  own=()
  for i in "${live[@]}"; do
    [[ $results =~ (^|[^A-Za-z0-9_])${task_id[i]}([^A-Za-z0-9_]|$) ]] && own+=("$i")
  done
  ((${#own[@]})) || exit 0
  name_tasks "$results" "${own[@]}"
  block "Your own background work is still running: $named. A subagent that ends its turn is finalized: this work would be orphaned, and nothing may wake you when it ends. Do not end your turn yet. ${how}Then finish with its result. If you no longer need it, stop it with TaskStop instead."
fi

# --- 2. Words, where the payload does not say what is running ------------------------------------
if stall_words; then
  # shellcheck disable=SC2016 # the command is for the agent to run, not expanded here
  block 'You ended your turn expecting to be woken when background work finishes. A subagent is not re-invoked: it is finalized when its turn ends and its background task is orphaned. Do not end the turn yet. In ONE Bash call, poll the task to completion and then use its result, e.g. for i in $(seq 1 240); do [ -s OUTPUT_FILE ] && break; sleep 5; done; cat OUTPUT_FILE'
fi
exit 0
