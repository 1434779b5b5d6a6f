//! What building a scenario from a session reads and accumulates: the session's agents and
//! what the steps, inputs and controls found so far (`build` fills it; `steps` and `timing`
//! read it).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::lift::Lifter;
use super::records::{Conversation, Outcome};
use super::redact::Redactor;

/// One agent of the session.
#[derive(Debug)]
pub struct Agent {
    pub name: String,
    /// The CLI's id for a subagent.
    pub id: Option<String>,
    pub conv: Conversation,
}

/// What building the draft reads and accumulates.
pub struct Context {
    /// The main agent first, then every spawned agent in the order it was spawned.
    pub agents: Vec<Agent>,
    /// Agent call (tool-use id) -> the agent it spawned (index into `agents`).
    pub children: HashMap<String, usize>,
    pub outcomes: HashMap<String, Outcome>,
    /// Tool inputs as the model sent them, by tool-use id.
    pub wire: BTreeMap<String, Value>,
    /// Tracked commands by tool-use id.
    pub tracks: HashMap<String, String>,
    /// The CLI's agent ids and the names they get.
    pub agent_ids: Vec<(String, String)>,
    pub redactor: Redactor,
    pub lifter: Lifter,
    pub header: Vec<String>,
}
