//! The scenario generator: random, valid scenarios built from the blocks the CLI offers, one
//! per (seed, case index), the same on every machine.
//!
//! A case is drawn as a [`Blueprint`] (a mode, a tree of agents each with a short list of
//! actions, and at most one driver action) and written out as scenario TOML. Durations are
//! drawn from classes, never from a continuum: the first background command lasts 3 s (inside
//! the CLI's ~5 s orphan grace) or 9 s (well past it), and every later background command or
//! agent ends 10 s or more after the one before, by an estimate of when it starts, so a case
//! never sits on a timing edge where the real CLI itself would give either answer. Every agent
//! answers the notifications it may get with short replies after its plan, so no turn runs out
//! of script because of a wake-up.

use std::fmt::Write as _;

use crate::scenario::DriverMode;
use crate::sim::engine::tools::long_leading_sleep;

/// How many agents a case has at most (the main agent included).
const MAX_AGENTS: usize = 4;
/// How deep agents nest: the main agent is depth 0, its subagents 1, theirs 2.
const MAX_DEPTH: u8 = 2;
/// A case's first background command length, in seconds: inside the CLI's ~5 s orphan grace,
/// or well past it.
const BG_SECONDS: [u32; 2] = [3, 9];
/// The gap between background command lengths: twice the orphan grace, so that a grace
/// started by one completion ends halfway between two others.
const SPACING_SECONDS: u32 = 10;
/// A foreground command a stop or an interrupt lands in.
const LONG_FOREGROUND_SECONDS: u32 = 9;

/// One scripted reply of an agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A Bash command: `sleep seconds; exit code`, in the foreground or the background.
    Bash {
        track: Option<String>,
        seconds: u32,
        exit: u8,
        background: bool,
    },
    /// An Agent call starting `child`, synchronous or in the background.
    Spawn { child: String, background: bool },
    /// The model's TaskStop of a background agent it started earlier.
    Stop { target: String },
}

/// One agent's plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    pub depth: u8,
    pub actions: Vec<Action>,
}

impl Agent {
    /// Notifications this agent may receive: one per background action.
    fn pending(&self) -> usize {
        self.actions
            .iter()
            .filter(|a| match a {
                Action::Bash { background, .. } | Action::Spawn { background, .. } => *background,
                Action::Stop { .. } => true,
            })
            .count()
    }
}

/// What the driver does after the prompt (session and pty modes only).
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// A user message once the session is quiet (no turn open, nothing running): a trigger
    /// that races nothing, and that surfaces a notification held until the next input.
    Input,
    /// The driver's `stop_task` of a background agent, a second into its first command `work`.
    StopTask { target: String, work: String },
    /// An interrupt a second into the main agent's first command `work`, and a new prompt a
    /// second after that command ends.
    Interrupt { work: String },
}

/// A drawn case, before it is written out.
#[derive(Debug, Clone, PartialEq)]
pub struct Blueprint {
    pub mode: DriverMode,
    pub agents: Vec<Agent>,
    pub control: Option<Control>,
}

/// A generated scenario: its name and file text.
#[derive(Debug, Clone)]
pub struct Generated {
    pub name: String,
    pub text: String,
    pub blueprint: Blueprint,
}

/// The seed of case `index` of a run seeded `seed` (SplitMix64 of both): case 7 is the same
/// scenario whatever the number of cases.
pub fn case_seed(seed: u64, index: u32) -> u64 {
    let mut z = seed ^ (u64::from(index) << 32 | u64::from(index)).wrapping_mul(0x9E37_79B9);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Case `index` (from 1) of the run seeded `seed`.
pub fn generate(seed: u64, index: u32) -> Generated {
    let blueprint = draw(&mut fastrand::Rng::with_seed(case_seed(seed, index)));
    let name = format!("fuzz-s{seed}-c{index:03}");
    let text = write(&name, seed, index, &blueprint);
    Generated {
        name,
        text,
        blueprint,
    }
}

/// Draws a blueprint.
pub fn draw(rng: &mut fastrand::Rng) -> Blueprint {
    let mode = match rng.u8(0..10) {
        0..=3 => DriverMode::Print,
        4..=8 => DriverMode::Session,
        _ => DriverMode::Pty,
    };
    let mut names = Names::default();
    let mut agents = Vec::new();
    let seat = Seat {
        mode,
        depth: 0,
        start: 0,
    };
    draw_agent(rng, "main".into(), seat, &mut names, &mut agents);
    let control = mode
        .row()
        .later_inputs
        .then(|| draw_control(rng, mode, &mut agents, &mut names))
        .flatten();
    Blueprint {
        mode,
        agents,
        control,
    }
}

/// Fresh names for agents (`a1`, `a2`, ...) and tracked commands (`b1`, ...), and when the
/// latest background piece of work of this case ends.
#[derive(Default)]
struct Names {
    agents: usize,
    commands: usize,
    /// The end of the latest-ending background command or agent drawn so far, in seconds from
    /// the prompt (as the case's [`Clock`]s count).
    last_end: Option<u32>,
}

impl Names {
    /// The length of background work that starts at `start`, chosen so that it ends
    /// [`SPACING_SECONDS`] or more after every other background command or agent of the case:
    /// the first is inside the orphan grace or well past it; later ones last at least the
    /// longer of the two. No two completions, nor a completion and the end of a grace another
    /// one started, then race on a CLI that starts each step a few hundred milliseconds late.
    fn background_seconds(&mut self, rng: &mut fastrand::Rng, start: u32) -> u32 {
        let end = match self.last_end {
            None => start + BG_SECONDS[rng.usize(..BG_SECONDS.len())],
            Some(last) => (last + SPACING_SECONDS).max(start + BG_SECONDS[BG_SECONDS.len() - 1]),
        };
        self.last_end = Some(end);
        end - start
    }
}

/// Draws `name`'s plan, starting `start` seconds after the prompt, and, depth first, the plans
/// of the agents it starts; `agents` gets the agent before its children, so the main agent
/// comes first. Returns when its turn ends, in seconds from the prompt (what a caller waiting
/// for it resumes at).
///
/// Races are left out by construction (a race would make the real CLI differ from itself, and
/// a difference from the simulator would then prove nothing):
/// - an agent starts at most one background agent, as its last action, and that agent waits a
///   second before acting, so the starter's turn ends first;
/// - a background agent ends with a foreground command that makes it finish at a time of its
///   own, spaced from every other background completion (see [`Names::background_seconds`]):
///   an agent's few model steps take a few hundred milliseconds, and two of those racing
///   decide the order of reports on the real CLI;
/// - in pty mode every Agent call runs in the background (the CLI launches it asynchronously
///   even with `run_in_background: false`), so there an agent starts only that one;
/// - a model stop lands in a long foreground command the stopped agent starts with, after a
///   two-second wait.
fn draw_agent(
    rng: &mut fastrand::Rng,
    name: String,
    seat: Seat,
    names: &mut Names,
    agents: &mut Vec<Agent>,
) -> u32 {
    let slot = agents.len();
    agents.push(Agent {
        name,
        depth: seat.depth,
        actions: Vec::new(),
    });
    let count = rng.usize(1..=3);
    let mut actions = Vec::new();
    let mut clock = seat.start;
    let mut background_child = None;
    for _ in 0..count {
        let can_spawn = seat.depth < MAX_DEPTH && names.agents + 1 < MAX_AGENTS;
        match rng.u8(0..10) {
            4 | 5 => actions.push(foreground_bash(0, if rng.u8(0..4) == 0 { 1 } else { 0 })),
            6..=8 if can_spawn => {
                let background = background_child.is_none()
                    && (seat.mode == DriverMode::Pty || rng.u8(0..10) < 7);
                if !background && seat.mode == DriverMode::Pty {
                    actions.push(background_bash(rng, names, clock));
                    continue;
                }
                names.agents += 1;
                let child = format!("a{}", names.agents);
                if background {
                    // Drawn below: it starts when this agent's plan is done.
                    background_child = Some(child);
                    continue;
                }
                clock = draw_agent(rng, child.clone(), seat.child(clock), names, agents);
                actions.push(Action::Spawn {
                    child,
                    background: false,
                });
            }
            _ => actions.push(background_bash(rng, names, clock)),
        }
    }
    if let Some(child) = background_child {
        actions.push(Action::Spawn {
            child: child.clone(),
            background: true,
        });
        if rng.u8(0..4) == 0 {
            names.commands += 1;
            let work = long_foreground(format!("b{}", names.commands));
            let first = agents.len();
            draw_agent(rng, child.clone(), seat.child(clock), names, agents);
            agents[first].actions.insert(0, work);
            actions.push(foreground_bash(2, 0));
            clock += 2;
            actions.push(Action::Stop { target: child });
        } else {
            let first = agents.len();
            let done = draw_agent(rng, child, seat.child(clock + 1), names, agents);
            let linger = names.background_seconds(rng, done);
            let plan = &mut agents[first].actions;
            plan.insert(0, foreground_bash(1, 0));
            plan.push(foreground_bash(linger, 0));
        }
    }
    agents[slot].actions = actions;
    clock
}

/// Where an agent sits in its case: the mode, its depth, and when it starts.
#[derive(Debug, Clone, Copy)]
struct Seat {
    mode: DriverMode,
    depth: u8,
    /// Seconds from the prompt.
    start: u32,
}

impl Seat {
    /// A child of this agent, starting at `start`.
    fn child(self, start: u32) -> Seat {
        Seat {
            depth: self.depth + 1,
            start,
            ..self
        }
    }
}

fn foreground_bash(seconds: u32, exit: u8) -> Action {
    Action::Bash {
        track: None,
        seconds,
        exit,
        background: false,
    }
}

/// A tracked foreground command long enough for a stop or an interrupt to land in.
fn long_foreground(track: String) -> Action {
    Action::Bash {
        track: Some(track),
        seconds: LONG_FOREGROUND_SECONDS,
        exit: 0,
        background: false,
    }
}

/// A background command started at `start`.
fn background_bash(rng: &mut fastrand::Rng, names: &mut Names, start: u32) -> Action {
    names.commands += 1;
    Action::Bash {
        track: Some(format!("b{}", names.commands)),
        seconds: names.background_seconds(rng, start),
        exit: if rng.u8(0..5) == 0 { 3 } else { 0 },
        background: true,
    }
}

/// At most one driver action, aimed at something the case has. A stop or an interrupt lands a
/// second into a long foreground command it puts first in its target's plan (the library's
/// pattern: the target is busy, not between turns, when the control arrives).
fn draw_control(
    rng: &mut fastrand::Rng,
    mode: DriverMode,
    agents: &mut [Agent],
    names: &mut Names,
) -> Option<Control> {
    let stopped_by_model = |child: &String| {
        agents[0]
            .actions
            .iter()
            .any(|a| matches!(a, Action::Stop { target } if target == child))
    };
    let stoppable: Vec<String> = agents[0]
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Spawn {
                child,
                background: true,
            } if !stopped_by_model(child) => Some(child.clone()),
            _ => None,
        })
        .collect();
    let (target, control) = match rng.u8(0..10) {
        0..=2 => return Some(Control::Input),
        // Control requests go over stream-json: the session driver only.
        _ if mode != DriverMode::Session => return None,
        3 | 4 if !stoppable.is_empty() => {
            let target = stoppable[rng.usize(..stoppable.len())].clone();
            (
                target.clone(),
                Control::StopTask {
                    target,
                    work: String::new(),
                },
            )
        }
        5 => (
            "main".to_string(),
            Control::Interrupt {
                work: String::new(),
            },
        ),
        _ => return None,
    };
    names.commands += 1;
    let work = format!("b{}", names.commands);
    let agent = agents.iter_mut().find(|a| a.name == target)?;
    agent.actions.insert(0, long_foreground(work.clone()));
    Some(match control {
        Control::StopTask { target, .. } => Control::StopTask { target, work },
        _ => Control::Interrupt { work },
    })
}

/// The longest a case can take with nothing going wrong: every command's length, summed.
fn work_seconds(blueprint: &Blueprint) -> u32 {
    blueprint
        .agents
        .iter()
        .flat_map(|a| &a.actions)
        .map(|a| match a {
            Action::Bash { seconds, .. } => *seconds,
            _ => 0,
        })
        .sum()
}

/// The scenario file of a blueprint.
pub fn write(name: &str, seed: u64, index: u32, blueprint: &Blueprint) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Generated by `wakeprobe fuzz --seed {seed}` (case {index}): a random composition of\n\
         # the blocks the CLI offers, run on the real CLI and on the simulator and compared.\n"
    );
    let _ = writeln!(out, "name = \"{name}\"");
    let _ = writeln!(out, "title = \"Generated case {index} of seed {seed}\"");
    let _ = writeln!(
        out,
        "summary = \"{} mode, {} agent(s), {} action(s)\"\n",
        blueprint.mode.as_str(),
        blueprint.agents.len(),
        blueprint
            .agents
            .iter()
            .map(|a| a.actions.len())
            .sum::<usize>()
    );
    write_driver(&mut out, blueprint);
    for agent in &blueprint.agents {
        write_agent(&mut out, agent);
    }
    out
}

fn write_driver(out: &mut String, blueprint: &Blueprint) {
    let _ = writeln!(out, "[driver]");
    let _ = writeln!(out, "mode = \"{}\"", blueprint.mode.as_str());
    let _ = writeln!(out, "prompt = \"Carry out the plan.\"");
    let _ = writeln!(out, "ceiling_seconds = {}", work_seconds(blueprint) + 60);
    let _ = writeln!(out, "settle_seconds = 3");
    if blueprint.mode == DriverMode::Pty {
        let _ = writeln!(
            out,
            "env = {{ CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS = \"1\" }}"
        );
    }
    let input = match &blueprint.control {
        None => None,
        Some(Control::Input) => Some("{ after = \"quiet\", text = \"Any news?\" }".into()),
        Some(Control::StopTask { target, work }) => Some(format!(
            "{{ after = \"task-start:{work}\", delay_seconds = 1, control = \"stop_task\", target = \"{target}\" }}"
        )),
        Some(Control::Interrupt { work }) => Some(format!(
            "\n  {{ after = \"task-start:{work}\", delay_seconds = 1, control = \"interrupt\" }},\n  \
             {{ after = \"task-end:{work}\", delay_seconds = 1, text = \"Carry on.\" }},\n"
        )),
    };
    if let Some(input) = input {
        let _ = writeln!(out, "inputs = [{input}]");
    }
    out.push('\n');
}

fn write_agent(out: &mut String, agent: &Agent) {
    for action in &agent.actions {
        let _ = writeln!(out, "[[agents.{}.steps]]", agent.name);
        match action {
            Action::Bash {
                track,
                seconds,
                exit,
                background,
            } => {
                let _ = writeln!(out, "call = \"Bash\"");
                if let Some(track) = track {
                    let _ = writeln!(out, "track = \"{track}\"");
                }
                let what = track.as_deref().unwrap_or("foreground");
                // A long foreground command must not hit the Bash tool's own 2-minute default.
                let how = match (background, *seconds > 2) {
                    (true, _) => "run_in_background = true, ",
                    (false, true) => "timeout = 600000, ",
                    (false, false) => "",
                };
                // 2.1.332 refuses a foreground command that starts with a long sleep; a
                // lingering agent's command is a wait all the same, so it starts with a no-op.
                let mut command = format!("sleep {seconds}; exit {exit}");
                if !background && long_leading_sleep(&command).is_some() {
                    command.insert_str(0, "true; ");
                }
                let _ = writeln!(
                    out,
                    "input = {{ command = \"{command}\", {how}description = \"Command {what}\" }}"
                );
            }
            Action::Spawn { child, background } => {
                let _ = writeln!(out, "call = \"Agent\"");
                let _ = writeln!(out, "spawn = \"{child}\"");
                let _ = writeln!(
                    out,
                    "input = {{ description = \"Worker {child}\", subagent_type = \"general-purpose\", run_in_background = {background}, prompt = \"Carry out the plan of {child}.\" }}"
                );
            }
            Action::Stop { target } => {
                let _ = writeln!(out, "call = \"TaskStop\"");
                let _ = writeln!(
                    out,
                    "input = {{ task_id = \"{{{{@agent-id:{target}}}}}\" }}"
                );
            }
        }
        out.push('\n');
    }
    // The end of the plan, then one reply per notification that may come.
    let _ = writeln!(
        out,
        "[[agents.{}.steps]]\nsay = \"{} has started its work.\"\n",
        agent.name, agent.name
    );
    for k in 1..=agent.pending() {
        let _ = writeln!(
            out,
            "[[agents.{}.steps]]\nsay = \"{} noted report {k}.\"\n",
            agent.name, agent.name
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A background agent's foreground command longer than this is moved to the background by
    /// 2.1.332 (its subagent cap, 3 minutes); no generated one comes close.
    const SUBAGENT_CAP_SECONDS: u32 = 180;

    #[test]
    fn a_case_is_the_same_whatever_else_is_generated() {
        let a = generate(1, 7);
        let _ = generate(1, 8);
        let b = generate(1, 7);
        assert_eq!(a.text, b.text);
        assert_ne!(generate(1, 7).text, generate(2, 7).text);
        assert_ne!(generate(1, 7).text, generate(1, 8).text);
    }

    #[test]
    fn every_block_appears_in_the_first_hundred_cases() {
        let all: Vec<Blueprint> = (1..=100).map(|i| generate(1, i).blueprint).collect();
        let actions = || all.iter().flat_map(|b| &b.agents).flat_map(|a| &a.actions);
        let seen = |f: &dyn Fn(&Action) -> bool| actions().any(f);
        assert!(seen(&|a| matches!(
            a,
            Action::Bash {
                background: true,
                ..
            }
        )));
        assert!(seen(&|a| matches!(
            a,
            Action::Bash {
                background: false,
                exit: 1,
                ..
            }
        )));
        assert!(seen(&|a| matches!(a, Action::Bash { exit: 3, .. })));
        assert!(seen(&|a| matches!(
            a,
            Action::Spawn {
                background: false,
                ..
            }
        )));
        assert!(seen(&|a| matches!(
            a,
            Action::Spawn {
                background: true,
                ..
            }
        )));
        assert!(seen(&|a| matches!(a, Action::Stop { .. })));
        assert!(all.iter().flat_map(|b| &b.agents).any(|a| a.depth == 2));
        for mode in [DriverMode::Print, DriverMode::Session, DriverMode::Pty] {
            assert!(all.iter().any(|b| b.mode == mode), "{mode:?}");
        }
        for control in [
            |c: &Control| matches!(c, Control::Input),
            |c: &Control| matches!(c, Control::StopTask { .. }),
            |c: &Control| matches!(c, Control::Interrupt { .. }),
        ] {
            assert!(all.iter().filter_map(|b| b.control.as_ref()).any(control));
        }
    }

    /// When each background completion of a case comes, in seconds from the prompt, walked
    /// from the blueprint as the CLI runs it: commands in order, a foreground agent waited for,
    /// a stopped agent (by the model or the driver) ending without running its plan, an
    /// interrupted first command cut after a second and the next prompt a second later.
    fn completions(b: &Blueprint) -> Vec<u32> {
        let stopped: Vec<&str> = b
            .agents
            .iter()
            .flat_map(|a| &a.actions)
            .filter_map(|a| match a {
                Action::Stop { target } => Some(target.as_str()),
                _ => None,
            })
            .chain(b.control.iter().filter_map(|c| match c {
                Control::StopTask { target, .. } => Some(target.as_str()),
                _ => None,
            }))
            .collect();
        let mut ends = Vec::new();
        walk(b, "main", 0, &stopped, &mut ends);
        ends
    }

    fn walk(b: &Blueprint, name: &str, start: u32, stopped: &[&str], ends: &mut Vec<u32>) -> u32 {
        let agent = b.agents.iter().find(|a| a.name == name).unwrap();
        let mut clock = start;
        for (i, action) in agent.actions.iter().enumerate() {
            match action {
                Action::Bash { .. } if i == 0 && stopped.contains(&name) => return clock,
                Action::Bash { track, .. }
                    if i == 0
                        && name == "main"
                        && matches!(&b.control, Some(Control::Interrupt { work }) if Some(work) == track.as_ref()) =>
                {
                    clock += 2
                }
                Action::Bash {
                    seconds,
                    background: true,
                    ..
                } => ends.push(clock + seconds),
                Action::Bash { seconds, .. } => clock += seconds,
                Action::Spawn {
                    child,
                    background: false,
                } => clock = walk(b, child, clock, stopped, ends),
                Action::Spawn { child, .. } => {
                    let end = walk(b, child, clock, stopped, ends);
                    if !stopped.contains(&child.as_str()) {
                        ends.push(end);
                    }
                }
                Action::Stop { .. } => {}
            }
        }
        clock
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Every generated file parses and plans, and stays within the bounds it promises.
        #[test]
        fn every_generated_scenario_is_valid(seed in any::<u64>(), index in 1u32..10_000) {
            let case = generate(seed, index);
            let path = std::path::Path::new("/fuzz").join(format!("{}.toml", case.name));
            let scenario = crate::scenario::Scenario::parse(&path, case.text.clone())
                .map_err(|e| TestCaseError::fail(format!("{e}\n{}", case.text)))?;
            for variant in scenario.variants() {
                scenario
                    .plan(&variant, &[])
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{}", case.text)))?;
            }
            let b = &case.blueprint;
            prop_assert!(b.agents.len() <= MAX_AGENTS);
            // No two background completions race: an interrupt's new prompt may come two
            // seconds later than drawn, nothing else moves them.
            let mut ends = completions(b);
            ends.sort_unstable();
            for pair in ends.windows(2) {
                prop_assert!(pair[1] - pair[0] >= SPACING_SECONDS - 2, "{ends:?}\n{}", case.text);
            }
            let longest = b.agents.iter().flat_map(|a| &a.actions).filter_map(|a| match a {
                Action::Bash { seconds, background: false, .. } => Some(*seconds),
                _ => None,
            }).max().unwrap_or(0);
            prop_assert!(longest < SUBAGENT_CAP_SECONDS, "{longest} s in the foreground");
            // Nothing generated is refused by the CLI's own input check (a refused linger
            // would not linger), as the simulator models that check.
            let scenario_plan = scenario.plan(&scenario.variants()[0], &[]).unwrap();
            for call in scenario_plan.agents.values().flatten().flat_map(|s| &s.calls) {
                if call.tool == "Bash" && call.input["run_in_background"] != true {
                    let command = call.input["command"].as_str().unwrap_or("");
                    prop_assert_eq!(long_leading_sleep(command), None);
                }
            }
            if b.mode == DriverMode::Pty {
                let foreground = |a: &Action| matches!(a, Action::Spawn { background: false, .. });
                prop_assert!(!b.agents.iter().flat_map(|a| &a.actions).any(foreground));
            }
            prop_assert!(b.agents.iter().all(|a| a.depth <= MAX_DEPTH));
        }
    }
}
