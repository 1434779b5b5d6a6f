//! Each agent's model replies as scenario steps: the reply's text is `say`, each tool call a
//! `call` with its input as the model sent it (tags the harness added stripped, a tracked
//! command unwrapped, durations lifted, the CLI's agent ids turned into `{{@agent-id:NAME}}`,
//! the user's paths and secrets redacted). A run of identical calls that ends where a
//! notification reaches the agent is one step repeated `until = "notified"`.

use serde_json::Value;

use super::context::Context;
use super::model::DraftStep;
use super::records::{Call, Entry};
/// The tag the harness appends to every prompt it hands an agent (`fake_api::request::agent_tag`).
const TAG_OPEN: &str = "[wakeprobe:agent=";

/// The text without the tag the harness appended, and the agent the tag names.
pub fn strip_tag(text: &str) -> (String, Option<String>) {
    let Some(start) = text.find(TAG_OPEN) else {
        return (text.to_string(), None);
    };
    let Some(len) = text[start..].find(']') else {
        return (text.to_string(), None);
    };
    let name = text[start + TAG_OPEN.len()..start + len].to_string();
    let before = text[..start].trim_end();
    let after = &text[start + len + 1..];
    (format!("{before}{after}"), Some(name))
}

/// `wp-track NAME 'COMMAND'` (how the harness wrapped a tracked command) as (NAME, COMMAND).
pub fn unwrap_track(command: &str) -> Option<(String, String)> {
    let rest = command.strip_prefix("wp-track ")?;
    let (name, quoted) = rest.split_once(' ')?;
    Some((name.to_string(), shell_unquote(quoted)?))
}

/// The inverse of `os::subprocess::shell_quoted`: one single-quoted shell word.
fn shell_unquote(word: &str) -> Option<String> {
    let inner = word.strip_prefix('\'')?.strip_suffix('\'')?;
    let unescaped = inner.replace("'\\''", "");
    (!unescaped.contains('\'')).then(|| inner.replace("'\\''", "'"))
}

/// Every string in a JSON value, changed by `f`.
fn map_strings(v: &mut Value, f: &mut dyn FnMut(&str) -> String) {
    match v {
        Value::String(s) => *s = f(s),
        Value::Array(items) => items.iter_mut().for_each(|i| map_strings(i, f)),
        Value::Object(map) => map.values_mut().for_each(|i| map_strings(i, f)),
        _ => {}
    }
}

/// One step in the making, with what the `until` folding needs.
struct Made {
    step: DraftStep,
    /// A notification reached the agent since its previous reply.
    notified_before: bool,
}

/// The steps of agent `a`.
pub fn steps(cx: &mut Context, a: usize) -> Vec<DraftStep> {
    let entries = cx.agents[a].conv.entries.clone();
    let mut made: Vec<Made> = Vec::new();
    let mut notified = false;
    for entry in &entries {
        match entry {
            Entry::Notification {
                delivered: true, ..
            } => notified = true,
            Entry::Reply(reply) if !reply.exhausted => {
                let calls: Vec<&Call> = reply.calls.iter().filter(|c| !is_loader(c)).collect();
                // A reply that only loaded deferred tools is no step: the fake API inserts
                // that call itself wherever the CLI defers the tool (and nowhere else).
                if calls.is_empty() && !reply.calls.is_empty() && reply.texts.is_empty() {
                    continue;
                }
                let say = Some(cx.text(&reply.texts.join("\n")));
                if calls.is_empty() {
                    made.push(Made {
                        step: DraftStep {
                            say: say.clone(),
                            ..DraftStep::default()
                        },
                        notified_before: notified,
                    });
                }
                for (i, call) in calls.iter().copied().enumerate() {
                    let mut step = call_step(cx, call);
                    if i == 0 {
                        step.say = say.clone().filter(|s| !s.is_empty());
                    } else {
                        step.notes.push(format!(
                            "the model made {} tool calls in one reply; replayed one per reply",
                            calls.len()
                        ));
                    }
                    made.push(Made {
                        step,
                        notified_before: notified && i == 0,
                    });
                }
                notified = false;
            }
            _ => {}
        }
    }
    fold_until(made)
}

/// A `ToolSearch` call: the CLI's loading of deferred tools, not a step of the script.
fn is_loader(call: &Call) -> bool {
    call.tool == "ToolSearch"
}

/// The tools whose command the harness may wrap as a tracked one (`wp-track NAME '...'`).
pub fn runs_a_command(tool: &str) -> bool {
    matches!(tool, "Bash" | "Monitor")
}

/// A tool call as a step: its input cleaned, its spawn and track.
fn call_step(cx: &mut Context, call: &Call) -> DraftStep {
    let mut input = cx.wire.get(&call.id).cloned().unwrap_or(call.input.clone());
    map_strings(&mut input, &mut |s| strip_tag(s).0);
    let mut step = DraftStep::default();
    if runs_a_command(&call.tool)
        && let Some(command) = input.get("command").and_then(Value::as_str)
    {
        let command = unwrap_track(command).map_or(command.to_string(), |(_, c)| c);
        let background = call.tool == "Monitor"
            || input.get("run_in_background").and_then(Value::as_bool) == Some(true)
            || cx.outcomes.get(&call.id).is_some_and(|o| o.backgrounded);
        let lifted = cx.lifter.command(&command, background);
        let redacted = cx.redactor.text(&lifted);
        if redacted.had_paths {
            step.notes.push(
                "this command referred to the user's own paths (now $PWD / $HOME): it runs in the throwaway sandbox, with no network".into(),
            );
        }
        input["command"] = redacted.text.into();
        step.track = cx.tracks.get(&call.id).cloned();
    }
    let ids = cx.agent_ids.clone();
    let redactor = cx.redactor.clone();
    let is_command = runs_a_command(&call.tool);
    if let Value::Object(map) = &mut input {
        for (k, v) in map.iter_mut() {
            if is_command && k == "command" {
                continue;
            }
            map_strings(v, &mut |s| {
                let mut s = s.to_string();
                for (id, name) in &ids {
                    s = s.replace(id.as_str(), &format!("{{{{@agent-id:{name}}}}}"));
                }
                redactor.text(&s).text
            });
        }
    }
    if let Some(&child) = cx.children.get(&call.id)
        && input.get("prompt").is_some_and(Value::is_string)
    {
        step.spawn = Some(cx.agents[child].name.clone());
    }
    step.call = Some((call.tool.clone(), input));
    step
}

/// A run of identical calls (two or more) followed by a reply that a notification preceded
/// becomes one step repeated until a request carries a notification.
fn fold_until(made: Vec<Made>) -> Vec<DraftStep> {
    let mut out: Vec<DraftStep> = Vec::new();
    let mut i = 0;
    while i < made.len() {
        let first = &made[i].step;
        let foldable = first.say.is_none()
            && first.call.is_some()
            && first.track.is_none()
            && first.spawn.is_none();
        let mut j = i;
        while foldable
            && j + 1 < made.len()
            && made[j + 1].step == *first
            && !made[j + 1].notified_before
        {
            j += 1;
        }
        let notified_next = made.get(j + 1).is_some_and(|m| m.notified_before);
        if j > i && notified_next {
            let mut step = first.clone();
            step.until_notified = true;
            step.notes.push(format!(
                "the transcript shows this call {} times in a row, then a background notification: replayed until a request carries one",
                j - i + 1
            ));
            out.push(step);
        } else {
            out.extend(made[i..=j].iter().map(|m| m.step.clone()));
        }
        i = j + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_wrappings_come_off() {
        assert_eq!(
            strip_tag("Do it.\n\n[wakeprobe:agent=worker]"),
            ("Do it.".to_string(), Some("worker".to_string()))
        );
        assert_eq!(
            strip_tag("Spawn it.  [wakeprobe:agent=main]"),
            ("Spawn it.".to_string(), Some("main".to_string()))
        );
        assert_eq!(strip_tag("plain").1, None);
        // As `os::subprocess::shell_quoted` wraps `sleep 3; echo 'x'`.
        assert_eq!(
            unwrap_track(r"wp-track bg 'sleep 3; echo '\''x'\'''"),
            Some(("bg".into(), "sleep 3; echo 'x'".into()))
        );
        assert_eq!(unwrap_track("wp-trackbg 'x'"), None);
        assert_eq!(unwrap_track("wp-track bg x"), None);
    }

    fn made(say: Option<&str>, cmd: Option<&str>, notified_before: bool) -> Made {
        Made {
            step: DraftStep {
                say: say.map(str::to_string),
                call: cmd.map(|c| ("Bash".to_string(), serde_json::json!({ "command": c }))),
                ..DraftStep::default()
            },
            notified_before,
        }
    }

    #[test]
    fn identical_calls_until_a_notification_fold_into_one() {
        let steps = fold_until(vec![
            made(None, Some("sleep 100 &"), false),
            made(None, Some("sleep 2"), false),
            made(None, Some("sleep 2"), false),
            made(None, Some("sleep 2"), false),
            made(Some("done"), None, true),
        ]);
        assert_eq!(steps.len(), 3);
        assert!(steps[1].until_notified && !steps[0].until_notified);
        // Without the notification after them, the calls stay as they were.
        let steps = fold_until(vec![
            made(None, Some("sleep 2"), false),
            made(None, Some("sleep 2"), false),
            made(Some("done"), None, false),
        ]);
        assert_eq!(steps.len(), 3);
        // A notification in the middle of the run splits it.
        let steps = fold_until(vec![
            made(None, Some("sleep 2"), false),
            made(None, Some("sleep 2"), true),
            made(Some("done"), None, true),
        ]);
        assert_eq!(steps.len(), 3);
    }
}
