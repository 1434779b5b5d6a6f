//! The presets on an integration under test (driver mode `command`): they set what the
//! integration showed its user (the `integration` source) beside what the CLI sent it, as the
//! CLI tap saw it (the `stream` source, both ways). So each names the layer at fault
//! ([`layer`]): the CLI, when what the integration should show never reached it; the
//! integration, when it did and was dropped, shown twice or misread.
//!
//! - `cli-turn-shown-once`: each turn the CLI started by itself (its stream shows a main-agent
//!   turn that no prompt from the integration opened) is shown once as `started_by = "cli"`.
//!   `once`, `dropped`, `duplicated`, `not-started` (the CLI started none), `not-observed`.
//! - `approvals-answered`: each permission request the CLI sent (`can_use_tool`) was shown as
//!   an approval of that tool, and an answer went back to the CLI. `answered`, `not-shown`,
//!   `not-answered`, `none-asked`.
//! - `idle-after-notification`: after the CLI's last background notification, its turn ended
//!   and the integration's last status is `idle`, shown after that notification (a status
//!   from before it says nothing of the turn it started). `idle`, `stuck`, `no-status`,
//!   `stale` (no status since the notification),
//!   `waits-on-approval` (the CLI's turn waits on a permission nobody answered), `cli-busy`,
//!   `not-observed`.
//! - `restored-status`: each subagent status the integration restored is the status the CLI's
//!   transcript of that subagent implies (seed 004's rules). `matches`, `differs`,
//!   `not-observed`.

use std::collections::HashMap;

use super::super::{Evidence, Layer, Observation, Settled};
use crate::evidence::integration::{IntegrationLine, Shown, StartedBy};
use crate::evidence::{Event, EventKind, Source, Timeline, Witness, secs};
use crate::scenario::{CheckKind, MAIN_AGENT};

/// The layer an observation of an integration preset puts the fault in; `None` where it
/// shows no fault (or nothing to judge).
pub fn layer(kind: CheckKind, observed: &str) -> Option<Layer> {
    match (kind, observed) {
        (CheckKind::CliTurnShownOnce, "dropped" | "duplicated")
        | (CheckKind::ApprovalsAnswered, "not-shown" | "not-answered")
        | (
            CheckKind::IdleAfterNotification,
            "stuck" | "no-status" | "stale" | "waits-on-approval",
        )
        | (CheckKind::RestoredStatus, "differs") => Some(Layer::Integration),
        (CheckKind::CliTurnShownOnce, "not-started")
        | (CheckKind::IdleAfterNotification, "cli-busy") => Some(Layer::Cli),
        _ => None,
    }
}

fn observation(observed: &str, witness: Vec<Witness>, explanation: String) -> Observation {
    Observation {
        observed: observed.into(),
        witness,
        explanation,
        settled: Settled::Open,
    }
}

/// What the integration showed, with its event (only an integration's line is `shown`).
fn shown(tl: &Timeline) -> impl Iterator<Item = (&Event, &IntegrationLine)> {
    tl.iter().filter_map(|e| match &e.kind {
        EventKind::Shown(line) => Some((e, line)),
        _ => None,
    })
}

/// Whether the run has the CLI tap's view of the CLI at all (a `command` run whose CLI ran).
fn tapped(tl: &Timeline) -> bool {
    tl.iter().any(|e| matches!(e.kind, EventKind::ToCli { .. }))
}

const NO_TAP: &str = "The run has no view of the lines between the integration and the CLI (no line went to the CLI through wakeprobe's tap: not a `command` run, or its integration never started the CLI named by WAKEPROBE_CLI), so what reached the integration is unknown.";

/// The first line of each main-agent turn in the CLI's stream, and whether a prompt from the
/// integration opened it (`false`: the CLI started it by itself).
fn turn_starts(tl: &Timeline) -> Vec<(&Event, bool)> {
    let mut starts = Vec::new();
    let (mut open, mut prompted) = (false, false);
    for e in tl.iter().filter(|e| e.source == Source::Stream) {
        match &e.kind {
            EventKind::ToCli { line_type, .. } if line_type == "user" => prompted = true,
            EventKind::StreamLine { line_type, .. }
                if line_type == "assistant" && e.agent.as_deref() == Some(MAIN_AGENT) && !open =>
            {
                starts.push((e, prompted));
                (open, prompted) = (true, false);
            }
            EventKind::TurnResult { .. } => open = false,
            _ => {}
        }
    }
    starts
}

pub fn cli_turn_shown_once(ev: &Evidence) -> Observation {
    let tl = ev.timeline;
    if !tapped(tl) {
        return observation("not-observed", vec![], NO_TAP.into());
    }
    let cli_turns: Vec<&Event> = turn_starts(tl)
        .into_iter()
        .filter(|(_, prompted)| !prompted)
        .map(|(e, _)| e)
        .collect();
    let shown_cli: Vec<&Event> = shown(tl)
        .filter(|(_, l)| l.shown == Shown::Turn && l.started_by == Some(StartedBy::Cli))
        .map(|(e, _)| e)
        .collect();
    let mut witness: Vec<Witness> = cli_turns
        .iter()
        .map(|e| Witness::of(e, "the CLI starts a turn by itself"))
        .chain(
            shown_cli
                .iter()
                .map(|e| Witness::of(e, "the integration shows a turn the CLI started")),
        )
        .collect();
    witness.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
    let (n, m) = (cli_turns.len(), shown_cli.len());
    let (word, words) = match (n, m) {
        (0, _) => (
            "not-started",
            format!(
                "The CLI started no turn by itself: every main-agent turn on its stream followed a prompt the integration sent, so no CLI-started turn ever reached the integration{}.",
                if m > 0 {
                    format!(" (yet it showed {m} as started by the CLI)")
                } else {
                    String::new()
                }
            ),
        ),
        (n, m) if m < n => (
            "dropped",
            format!(
                "The CLI started {n} turn(s) by itself, first at {}, and its stream carried them to the integration, which showed {m} as started by the CLI: it dropped what reached it.",
                secs(cli_turns[0].t_ms)
            ),
        ),
        (n, m) if m > n => (
            "duplicated",
            format!(
                "The CLI started {n} turn(s) by itself, and the integration showed {m} turns as started by the CLI: it showed one twice."
            ),
        ),
        (n, _) => (
            "once",
            format!(
                "The CLI started {n} turn(s) by itself, first at {}, and the integration showed each once, as started by the CLI.",
                secs(cli_turns[0].t_ms)
            ),
        ),
    };
    observation(word, witness, words)
}

/// The CLI's permission requests to the integration (`can_use_tool`), in order: those with a
/// request id (an SDK host's `canUseTool` has none: it answers itself).
fn requests(tl: &Timeline) -> Vec<(&Event, &str, &str)> {
    tl.iter()
        .filter_map(|e| match &e.kind {
            EventKind::PermissionAsked {
                tool,
                request_id: Some(id),
                ..
            } => Some((e, tool.as_str(), id.as_str())),
            _ => None,
        })
        .collect()
}

fn answer_to<'t>(tl: &'t Timeline, id: &str) -> Option<&'t Event> {
    tl.iter().find(
        |e| matches!(&e.kind, EventKind::PermissionAnswered { request_id, .. } if request_id == id),
    )
}

pub fn approvals_answered(ev: &Evidence) -> Observation {
    let tl = ev.timeline;
    if !tapped(tl) {
        return observation("not-observed", vec![], NO_TAP.into());
    }
    let asked = requests(tl);
    if asked.is_empty() {
        return observation(
            "none-asked",
            vec![],
            "The CLI sent the integration no permission request.".into(),
        );
    }
    // Each request is matched with the first approval of its tool the integration showed after
    // it that no earlier request took.
    let approvals: Vec<(&Event, &IntegrationLine)> = shown(tl)
        .filter(|(_, l)| l.shown == Shown::ApprovalAsked)
        .collect();
    let mut taken = vec![false; approvals.len()];
    let mut witness = Vec::new();
    for (request, tool, id) in &asked {
        witness.push(Witness::of(
            request,
            format!("the CLI asks for permission to use {tool}"),
        ));
        let shown_at = approvals.iter().enumerate().find(|(i, (e, l))| {
            !taken[*i] && e.t_ms >= request.t_ms && l.tool.as_deref() == Some(tool)
        });
        let Some((i, (shown_event, _))) = shown_at else {
            return observation(
                "not-shown",
                witness,
                format!(
                    "The CLI asked the integration for permission to use {tool} at {} and the request reached it, but the integration never showed its user an approval for {tool}: the request is still pending, and the CLI waits on it.",
                    secs(request.t_ms)
                ),
            );
        };
        taken[i] = true;
        witness.push(Witness::of(
            shown_event,
            format!("the integration shows the {tool} approval"),
        ));
        match answer_to(tl, id) {
            Some(answer) => witness.push(Witness::of(answer, "the answer goes back to the CLI")),
            None => {
                return observation(
                    "not-answered",
                    witness,
                    format!(
                        "The integration showed the {tool} approval at {} but never sent the CLI an answer: the CLI still waits on it.",
                        secs(shown_event.t_ms)
                    ),
                );
            }
        }
    }
    observation(
        "answered",
        witness,
        format!(
            "Each of the CLI's {} permission request(s) was shown to the user as an approval of its tool, and answered back to the CLI.",
            asked.len()
        ),
    )
}

pub fn idle_after_notification(ev: &Evidence) -> Observation {
    let tl = ev.timeline;
    if !tapped(tl) {
        return observation("not-observed", vec![], NO_TAP.into());
    }
    let last_notice = tl
        .iter()
        .filter(|e| e.source == Source::Stream && matches!(e.kind, EventKind::TaskNotified { .. }))
        .last();
    let Some(notice) = last_notice else {
        return observation(
            "not-observed",
            vec![],
            "The CLI's stream carried no background notification, so there is no last one to return to idle after.".into(),
        );
    };
    let mut witness = vec![Witness::of(
        notice,
        "the CLI's last background notification",
    )];
    let turn_end = tl.iter().find(|e| {
        e.t_ms >= notice.t_ms
            && e.source == Source::Stream
            && matches!(e.kind, EventKind::TurnResult { .. })
    });
    let Some(turn_end) = turn_end else {
        let pending = requests(tl)
            .into_iter()
            .find(|(e, _, id)| e.t_ms >= notice.t_ms && answer_to(tl, id).is_none());
        return match pending {
            Some((request, tool, _)) => {
                witness.push(Witness::of(request, format!("the CLI asks to use {tool}, unanswered")));
                observation(
                    "waits-on-approval",
                    witness,
                    format!(
                        "After the last notification the CLI's turn never ended: it waits on its request for permission to use {tool} ({}), which the integration never answered.",
                        secs(request.t_ms)
                    ),
                )
            }
            None => observation(
                "cli-busy",
                witness,
                "After the last notification the CLI's turn never ended (no result on its stream), with nothing the integration owed it: the CLI, not the integration, is still busy.".into(),
            ),
        };
    };
    witness.push(Witness::of(turn_end, "the CLI's turn ends"));
    let last_status = shown(tl).filter(|(_, l)| l.shown == Shown::Status).last();
    let Some((status_event, line)) = last_status else {
        return observation(
            "no-status",
            witness,
            "The integration never showed a status.".into(),
        );
    };
    let status = line.status.as_deref().unwrap_or("?");
    witness.push(Witness::of(
        status_event,
        format!("the integration's last status: {status}"),
    ));
    if status_event.t_ms < notice.t_ms {
        // Judged after the event it is about: an idle shown before the notification is no
        // return to idle after the turn the notification started.
        witness.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
        return observation(
            "stale",
            witness,
            format!(
                "The integration's last status (`{status}`, at {}) came before the CLI's last notification ({}): it showed nothing of the turn the CLI took after it.",
                secs(status_event.t_ms),
                secs(notice.t_ms)
            ),
        );
    }
    if status == "idle" {
        return observation(
            "idle",
            witness,
            format!(
                "The CLI's turn after its last notification ended at {}, and the integration's last status is idle ({}).",
                secs(turn_end.t_ms),
                secs(status_event.t_ms)
            ),
        );
    }
    observation(
        "stuck",
        witness,
        format!(
            "The CLI's turn after its last notification ended at {}, but the integration's last status is `{status}` ({}): it never returned to idle.",
            secs(turn_end.t_ms),
            secs(status_event.t_ms)
        ),
    )
}

/// The scenario's name for each CLI task or agent id the run saw.
fn names_by_id(tl: &Timeline) -> HashMap<&str, &str> {
    let mut names = HashMap::new();
    for e in tl.iter() {
        match &e.kind {
            EventKind::TaskStarted {
                task_id,
                label: Some(label),
                ..
            } => {
                names.insert(task_id.as_str(), label.as_str());
            }
            EventKind::Hook {
                agent_id: Some(id), ..
            } => {
                if let Some(agent) = &e.agent {
                    names.insert(id.as_str(), agent.as_str());
                }
            }
            _ => {}
        }
    }
    names
}

/// An agent's status as its transcript tells it (seed 004's rules).
fn transcript_status<'t>(tl: &'t Timeline, agent: &str) -> Option<(&'t Event, &'t str)> {
    tl.iter().find_map(|e| match &e.kind {
        EventKind::TranscriptFact { fact, .. } if e.agent.as_deref() == Some(agent) => {
            fact.strip_prefix("status ").map(|s| (e, s))
        }
        _ => None,
    })
}

pub fn restored_status(ev: &Evidence) -> Observation {
    let tl = ev.timeline;
    let names = names_by_id(tl);
    let mut witness = Vec::new();
    let mut compared = 0;
    for (e, line) in shown(tl).filter(|(_, l)| l.shown == Shown::SubagentStatus) {
        let restored = line.status.as_deref().unwrap_or("?");
        let id = line.task.as_deref().unwrap_or("?");
        let Some(agent) = names.get(id).copied() else {
            continue;
        };
        let Some((fact, status)) = transcript_status(tl, agent) else {
            continue;
        };
        compared += 1;
        witness.push(Witness::of(
            e,
            format!("the integration restores `{agent}` as {restored}"),
        ));
        witness.push(Witness::of(
            fact,
            format!("`{agent}`'s transcript: {status}"),
        ));
        if restored != status {
            return observation(
                "differs",
                witness,
                format!(
                    "The integration restored `{agent}` ({id}) as {restored}, but the CLI's transcript of it, which the integration reads, implies {status} (seed 004's rules: a background Agent call's `async_launched` result is not the child's outcome)."
                ),
            );
        }
    }
    if compared == 0 {
        return observation(
            "not-observed",
            vec![],
            "The integration restored no subagent the run knows with a transcript to compare: no `subagent_status` line named a task or agent id of this run's subagents.".into(),
        );
    }
    observation(
        "matches",
        witness,
        format!(
            "Each of the {compared} subagent(s) the integration restored has the status its transcript implies."
        ),
    )
}

#[cfg(test)]
mod tests {
    //! Small timelines at each edge of the four presets: which turn the CLI started, which
    //! approval answers which request, which status is the last, and which restored status is
    //! compared with which transcript; and the layer each observation names.

    use super::*;
    use crate::checks::RawSources;
    use crate::evidence::run::EndReason;
    use crate::evidence::test_events::ev;

    /// What the preset observes of `events` on a finished run.
    fn observation(kind: CheckKind, events: Vec<Event>) -> Observation {
        let timeline = Timeline::new(events);
        let raw = RawSources::default();
        let evidence = Evidence {
            timeline: &timeline,
            raw: &raw,
            end: EndReason::Finished,
        };
        crate::checks::preset(kind).observe(&evidence, MAIN_AGENT)
    }

    /// The preset's word for `events`, and the layer it names.
    fn observe(kind: CheckKind, events: Vec<Event>) -> (String, Option<Layer>) {
        let observed = observation(kind, events).observed;
        let layer = crate::checks::preset(kind).layer(&observed);
        (observed, layer)
    }

    fn to_cli(t: f64, line_type: &str) -> Event {
        ev(
            t,
            Source::Stream,
            (line_type == "user").then_some(MAIN_AGENT),
            EventKind::ToCli {
                line_type: line_type.into(),
                subtype: None,
            },
        )
    }

    fn assistant(t: f64, agent: Option<&str>) -> Event {
        ev(
            t,
            Source::Stream,
            agent,
            EventKind::StreamLine {
                line_type: "assistant".into(),
                subtype: None,
            },
        )
    }

    fn result(t: f64) -> Event {
        ev(
            t,
            Source::Stream,
            Some(MAIN_AGENT),
            EventKind::TurnResult {
                subtype: "success".into(),
                num_turns: None,
                is_error: false,
                origin: None,
            },
        )
    }

    fn line(t: f64, json: &str) -> Event {
        let line: IntegrationLine = serde_json::from_str(json).unwrap();
        ev(t, Source::Integration, None, EventKind::Shown(line))
    }

    fn shown_cli_turn(t: f64) -> Event {
        line(t, r#"{"shown":"turn","started_by":"cli"}"#)
    }

    /// A prompt's turn (100-200 ms), then one the CLI starts by itself at 1000 ms.
    fn cli_turn() -> Vec<Event> {
        vec![
            to_cli(100.0, "user"),
            assistant(150.0, Some(MAIN_AGENT)),
            // A subagent's line is no turn of the main agent.
            assistant(160.0, Some("worker")),
            assistant(170.0, None),
            result(200.0),
            assistant(1000.0, Some(MAIN_AGENT)),
            assistant(1010.0, Some(MAIN_AGENT)),
            result(1100.0),
        ]
    }

    #[test]
    fn a_turn_no_prompt_opened_is_the_clis_own_and_must_be_shown_once() {
        let once = [cli_turn(), vec![shown_cli_turn(1005.0)]].concat();
        assert_eq!(
            observe(CheckKind::CliTurnShownOnce, once),
            ("once".into(), None)
        );
        assert_eq!(
            observe(CheckKind::CliTurnShownOnce, cli_turn()),
            ("dropped".into(), Some(Layer::Integration))
        );
        let twice = [
            cli_turn(),
            vec![shown_cli_turn(1005.0), shown_cli_turn(1020.0)],
        ]
        .concat();
        assert_eq!(
            observe(CheckKind::CliTurnShownOnce, twice),
            ("duplicated".into(), Some(Layer::Integration))
        );
        // A turn shown as the prompt's is not the CLI's turn shown; a control request the
        // integration sent is no prompt that opens a turn.
        let as_prompts = [
            cli_turn(),
            vec![
                line(105.0, r#"{"shown":"turn","started_by":"prompt"}"#),
                to_cli(900.0, "control_request"),
                line(1005.0, r#"{"shown":"turn","started_by":"prompt"}"#),
            ],
        ]
        .concat();
        assert_eq!(
            observe(CheckKind::CliTurnShownOnce, as_prompts),
            ("dropped".into(), Some(Layer::Integration))
        );
    }

    #[test]
    fn a_turn_a_prompt_opened_is_not_the_clis_even_when_it_comes_later() {
        // A prompt sent while the first turn was open opens the next one too.
        let prompted = vec![
            to_cli(100.0, "user"),
            assistant(150.0, Some(MAIN_AGENT)),
            to_cli(180.0, "user"),
            result(200.0),
            assistant(1000.0, Some(MAIN_AGENT)),
            result(1100.0),
            shown_cli_turn(1005.0),
        ];
        assert_eq!(
            observe(CheckKind::CliTurnShownOnce, prompted),
            ("not-started".into(), Some(Layer::Cli))
        );
        // A run with no line to the CLI has no tap: nothing is judged.
        let untapped = vec![assistant(150.0, Some(MAIN_AGENT)), result(200.0)];
        assert_eq!(
            observe(CheckKind::CliTurnShownOnce, untapped),
            ("not-observed".into(), None)
        );
    }

    fn asked(t: f64, tool: &str, id: &str) -> Event {
        ev(
            t,
            Source::Stream,
            Some(MAIN_AGENT),
            EventKind::PermissionAsked {
                tool: tool.into(),
                tool_use_id: None,
                agent_id: None,
                answer: None,
                request_id: Some(id.into()),
            },
        )
    }

    fn answered(t: f64, tool: &str, id: &str) -> Event {
        ev(
            t,
            Source::Stream,
            Some(MAIN_AGENT),
            EventKind::PermissionAnswered {
                request_id: id.into(),
                tool: tool.into(),
                answer: "allow".into(),
            },
        )
    }

    fn approval(t: f64, tool: &str) -> Event {
        line(
            t,
            &format!(r#"{{"shown":"approval_asked","tool":"{tool}"}}"#),
        )
    }

    #[test]
    fn each_request_needs_its_own_approval_of_its_tool_shown_after_it_and_an_answer() {
        let base = || vec![to_cli(10.0, "user"), asked(100.0, "Bash", "r1")];
        let kind = CheckKind::ApprovalsAnswered;
        let all = [
            base(),
            vec![approval(110.0, "Bash"), answered(120.0, "Bash", "r1")],
        ]
        .concat();
        assert_eq!(observe(kind, all), ("answered".into(), None));
        // An approval of another tool, or one shown before the request, is not its approval.
        let other_tool = [
            base(),
            vec![approval(110.0, "Write"), answered(120.0, "Bash", "r1")],
        ]
        .concat();
        assert_eq!(
            observe(kind, other_tool),
            ("not-shown".into(), Some(Layer::Integration))
        );
        let before = vec![
            to_cli(10.0, "user"),
            approval(90.0, "Bash"),
            asked(100.0, "Bash", "r1"),
            answered(120.0, "Bash", "r1"),
        ];
        assert_eq!(observe(kind, before).0, "not-shown");
        let unanswered = [base(), vec![approval(110.0, "Bash")]].concat();
        assert_eq!(
            observe(kind, unanswered),
            ("not-answered".into(), Some(Layer::Integration))
        );
        // Two requests of one tool need two approvals: one shown approval answers only one.
        let two = [
            base(),
            vec![
                approval(110.0, "Bash"),
                answered(120.0, "Bash", "r1"),
                asked(200.0, "Bash", "r2"),
                answered(220.0, "Bash", "r2"),
            ],
        ]
        .concat();
        assert_eq!(observe(kind, two).0, "not-shown");
        assert_eq!(
            observe(kind, vec![to_cli(10.0, "user")]),
            ("none-asked".into(), None)
        );
    }

    fn notified(t: f64) -> Event {
        ev(
            t,
            Source::Stream,
            Some(MAIN_AGENT),
            EventKind::TaskNotified {
                task_id: "t1".into(),
                status: "completed".into(),
                label: None,
                summary: None,
            },
        )
    }

    fn status(t: f64, status: &str) -> Event {
        line(t, &format!(r#"{{"shown":"status","status":"{status}"}}"#))
    }

    #[test]
    fn the_last_status_after_the_turn_that_took_the_last_notification_decides() {
        let kind = CheckKind::IdleAfterNotification;
        let ended = || vec![to_cli(10.0, "user"), notified(500.0), result(600.0)];
        let idle = [ended(), vec![status(550.0, "busy"), status(610.0, "idle")]].concat();
        assert_eq!(observe(kind, idle), ("idle".into(), None));
        let stuck = [ended(), vec![status(610.0, "idle"), status(620.0, "busy")]].concat();
        assert_eq!(
            observe(kind, stuck),
            ("stuck".into(), Some(Layer::Integration))
        );
        assert_eq!(
            observe(kind, ended()),
            ("no-status".into(), Some(Layer::Integration))
        );
        // An idle shown before the notification (1.82 s against 6.03 s in a buggy chat
        // product) is stale: the integration showed nothing of the turn the notice started.
        let stale = [ended(), vec![status(300.0, "idle")]].concat();
        assert_eq!(
            observe(kind, stale),
            ("stale".into(), Some(Layer::Integration))
        );
        // A result before the notification is not the turn that took it.
        let early = vec![
            to_cli(10.0, "user"),
            result(400.0),
            notified(500.0),
            status(610.0, "idle"),
        ];
        assert_eq!(observe(kind, early), ("cli-busy".into(), Some(Layer::Cli)));
        // The turn never ends on a request nobody answered; one answered is no excuse.
        let waits = vec![
            to_cli(10.0, "user"),
            notified(500.0),
            asked(520.0, "Bash", "r1"),
            status(610.0, "idle"),
        ];
        assert_eq!(
            observe(kind, waits),
            ("waits-on-approval".into(), Some(Layer::Integration))
        );
        let answered_then_busy = vec![
            to_cli(10.0, "user"),
            notified(500.0),
            asked(520.0, "Bash", "r1"),
            answered(530.0, "Bash", "r1"),
        ];
        assert_eq!(observe(kind, answered_then_busy).0, "cli-busy");
        // A request before the last notification is not what the turn after it waits on.
        let older = vec![
            to_cli(10.0, "user"),
            asked(300.0, "Bash", "r1"),
            notified(500.0),
        ];
        assert_eq!(observe(kind, older).0, "cli-busy");
        assert_eq!(
            observe(kind, vec![to_cli(10.0, "user")]),
            ("not-observed".into(), None)
        );
    }

    fn started(t: f64, id: &str, label: &str) -> Event {
        ev(
            t,
            Source::Stream,
            Some(MAIN_AGENT),
            EventKind::TaskStarted {
                task_id: id.into(),
                task_type: "local_agent".into(),
                tool_use_id: None,
                label: Some(label.into()),
                description: None,
            },
        )
    }

    fn fact(t: f64, agent: &str, fact: &str) -> Event {
        ev(
            t,
            Source::Transcript,
            Some(agent),
            EventKind::TranscriptFact {
                fact: fact.into(),
                detail: String::new(),
            },
        )
    }

    fn restored(t: f64, id: &str, status: &str) -> Event {
        line(
            t,
            &format!(r#"{{"shown":"subagent_status","task":"{id}","status":"{status}"}}"#),
        )
    }

    #[test]
    fn a_restored_status_is_compared_with_its_own_agents_transcript() {
        let kind = CheckKind::RestoredStatus;
        let run = || {
            vec![
                started(100.0, "a1", "worker"),
                started(110.0, "a2", "helper"),
                fact(900.0, "worker", "async launches a2"),
                fact(901.0, "worker", "status canceled"),
                fact(902.0, "helper", "status completed"),
            ]
        };
        let right = [
            run(),
            vec![
                restored(800.0, "a1", "canceled"),
                restored(810.0, "a2", "completed"),
            ],
        ]
        .concat();
        assert_eq!(observe(kind, right.clone()), ("matches".into(), None));
        let words = observation(kind, right).explanation;
        assert!(words.starts_with("Each of the 2 subagent(s)"), "{words}");
        let wrong = [
            run(),
            vec![
                restored(800.0, "a2", "completed"),
                restored(810.0, "a1", "completed"),
            ],
        ]
        .concat();
        assert_eq!(
            observe(kind, wrong),
            ("differs".into(), Some(Layer::Integration))
        );
        // An agent the run knows only from its hooks (a teammate has no task line).
        let hook = EventKind::hook(crate::evidence::HookName::SubagentStart, 0, Some("m1"));
        let by_hook = vec![
            ev(100.0, Source::Hook, Some("mate"), hook),
            fact(900.0, "mate", "status completed"),
            restored(800.0, "m1", "completed"),
        ];
        assert_eq!(observe(kind, by_hook), ("matches".into(), None));
        // An id the run never saw, or no line at all: nothing to compare.
        let unknown = [run(), vec![restored(800.0, "zz", "completed")]].concat();
        assert_eq!(observe(kind, unknown), ("not-observed".into(), None));
        assert_eq!(observe(kind, run()).0, "not-observed");
    }
}
