//! Kinds of difference: a conform difference with the case's own names taken out, so that
//! differences of many generated cases can be counted together and one shrunk scenario can
//! stand for all cases of its kind.

use crate::conform::Difference;

/// The kind of one difference: `verdict`, `main agent (events)`, `subagent (stream)`,
/// `task (counts)`, `hook payload keys of SubagentStop`, ...
pub fn kind_of(difference: &Difference) -> String {
    let place = difference.place.as_str();
    let Some(lane) = place.strip_prefix("lane ") else {
        return place.to_string();
    };
    let (name, rest) = lane.split_once(' ').unwrap_or((lane, ""));
    let part = rest
        .split_once(')')
        .map(|(part, _)| format!("{part})"))
        .unwrap_or_default();
    let who = match name.split_once(':') {
        Some(("agent", "main")) => "main agent",
        Some(("agent", _)) => "subagent",
        Some(("task", _)) => "task",
        _ => name,
    };
    format!("{who} {part}").trim_end().to_string()
}

/// The kinds of a comparison's differences, each once, in the order they first appear.
pub fn kinds_of(differences: &[Difference]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for d in differences {
        let kind = kind_of(d);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

/// The kind a shrunk case must keep showing: the verdict when it differs (it is what a user
/// sees), else the first difference.
pub fn primary(kinds: &[String]) -> Option<&String> {
    kinds.iter().find(|k| *k == "verdict").or(kinds.first())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(place: &str) -> Difference {
        Difference {
            place: place.into(),
            detail: vec![],
        }
    }

    #[test]
    fn lanes_lose_their_names_and_keep_their_part() {
        for (place, kind) in [
            ("verdict", "verdict"),
            (
                "lane agent:main (events): step 3 is `a` on the real CLI, `b` on the simulator",
                "main agent (events)",
            ),
            (
                "lane agent:a2 (stream): the simulator stops after step 1",
                "subagent (stream)",
            ),
            ("lane task:b1 (counts)", "task (counts)"),
            ("lane driver (events): same", "driver (events)"),
            ("lane session (stream): x", "session (stream)"),
            (
                "hook payload keys of SubagentStop",
                "hook payload keys of SubagentStop",
            ),
        ] {
            assert_eq!(kind_of(&at(place)), kind, "{place}");
        }
    }

    #[test]
    fn kinds_are_listed_once_in_order_and_the_verdict_comes_first_as_primary() {
        let kinds = kinds_of(&[
            at("lane agent:a1 (events): x"),
            at("lane agent:a2 (events): y"),
            at("verdict"),
        ]);
        assert_eq!(kinds, ["subagent (events)", "verdict"]);
        assert_eq!(primary(&kinds).map(String::as_str), Some("verdict"));
        assert_eq!(
            primary(&kinds[..1]).map(String::as_str),
            Some("subagent (events)")
        );
        assert_eq!(primary(&[]), None);
    }
}
