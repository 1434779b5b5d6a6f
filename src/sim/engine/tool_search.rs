//! ToolSearch: loading deferred tools. `select:A,B` (or keywords) finds tools among the agent's
//! deferred ones (see [`catalog`]); the ones found are offered from the agent's next request
//! on. The result is one `tool_reference` per tool, followed in the same user message by
//! "Tool loaded." (as 2.1.332 answers); a search that finds nothing says so in text.

use super::*;

/// At most this many keyword matches unless the input says otherwise (`max_results`).
const DEFAULT_MAX_RESULTS: usize = 5;

impl Sim {
    pub(super) fn tool_search(&self, a: usize, input: &Value) -> ToolOut {
        let Some(query) = input["query"].as_str() else {
            return ToolOut::error("InputValidationError: ToolSearch needs a string `query`");
        };
        let max = input["max_results"]
            .as_u64()
            .map_or(DEFAULT_MAX_RESULTS, |m| m as usize);
        let (found, total) = {
            let mut st = self.state();
            let agent = &mut st.agents[a];
            let deferred = catalog::deferred_names(agent.kind, self.cfg.interactive());
            let found = catalog::search(&deferred, query, max);
            for tool in &found {
                if !agent.loaded_tools.contains(tool) {
                    agent.loaded_tools.push(tool.clone());
                }
            }
            (found, deferred.len())
        };
        let response = json!({"matches": found, "query": query, "total_deferred_tools": total});
        if found.is_empty() {
            return ToolOut::ok(texts::NO_DEFERRED_MATCH, response);
        }
        let references: Vec<Value> = found
            .iter()
            .map(|t| json!({"type": "tool_reference", "tool_name": t}))
            .collect();
        ToolOut {
            after: Some(texts::TOOL_LOADED),
            ..ToolOut::ok(references, response)
        }
    }
}
