//! The differential test of the exported script's judgement: one saved run, judged by wakeprobe
//! (`SavedRun::judge`) and by the script `wakeprobe export` writes (`node repro.mjs --judge DIR
//! --json`), must give the same outcome, the same verdict per waiter and work (latency
//! included), and for each check and invariant the same observation, pass, `want`, vacuity,
//! selector counts and witness. The prose is each side's own and is not compared.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use wakeprobe::classify::Judgement;
use wakeprobe::scenario::Plan;
use wakeprobe::store::saved::SavedRun;

/// Every disagreement between wakeprobe and the exported script on the run in `dir`, judged
/// with `plan` (the run's own when `None`); empty when they agree.
pub fn disagreements(dir: &Path, plan: Option<&Plan>) -> Vec<String> {
    let saved = SavedRun::load(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let plan = plan.cloned().unwrap_or_else(|| saved.plan.clone());
    let ours = wakeprobe::classify::judge_run(&saved.info, &saved.timeline, &plan, &saved.raw);
    let theirs = script_judgement(dir, &plan);
    compare(&ours, &theirs)
}

/// The exported script's judgement of the run folder `dir`, as its `--json` prints it.
pub fn script_judgement(dir: &Path, plan: &Plan) -> Value {
    let scratch = tempfile::tempdir().unwrap();
    let script = scratch.path().join("repro.mjs");
    std::fs::write(&script, wakeprobe::report::export::render(plan, "2.1.332")).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&script).arg("--judge").arg(dir).arg("--json");
    let out = super::output_within(cmd, Duration::from_secs(60));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: the script's --json is not JSON ({e}):\n{}\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// What both sides must agree on, side by side.
fn compare(ours: &Judgement, theirs: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut differ = |what: String, a: Value, b: &Value| {
        if floats(&a) != floats(b) {
            found.push(format!("{what}: wakeprobe {a}, script {b}"));
        }
    };
    differ("outcome".into(), json!(ours.outcome), &theirs["outcome"]);
    let verdicts = theirs["verdicts"].as_array().cloned().unwrap_or_default();
    differ(
        "verdicts".into(),
        json!(ours.verdicts.len()),
        &json!(verdicts.len()),
    );
    for (v, s) in ours.verdicts.iter().zip(&verdicts) {
        let pair = format!("{}/{}", v.waiter, v.work);
        differ(
            format!("{pair} pair"),
            json!([v.waiter, v.work]),
            &json!([s["waiter"], s["work"]]),
        );
        differ(format!("{pair} outcome"), json!(v.outcome), &s["outcome"]);
        // Latencies are differences of the same stamps: equal to the microsecond.
        let (a, b) = (v.latency_ms, s["latency_ms"].as_f64());
        if a.is_some() != b.is_some() || a.zip(b).is_some_and(|(a, b)| (a - b).abs() > 0.001) {
            differ(format!("{pair} latency"), json!(a), &json!(b));
        }
    }
    for (list, theirs) in [
        (&ours.checks, &theirs["checks"]),
        (&ours.invariants, &theirs["invariants"]),
    ] {
        let theirs = theirs.as_array().cloned().unwrap_or_default();
        differ("checks".into(), json!(list.len()), &json!(theirs.len()));
        for (c, s) in list.iter().zip(&theirs) {
            let name = &c.name;
            differ(format!("“{name}” name"), json!(c.name), &s["name"]);
            differ(format!("“{name}” kind"), json!(c.kind), &s["kind"]);
            differ(
                format!("“{name}” observed"),
                json!(c.observed),
                &s["observed"],
            );
            differ(format!("“{name}” passed"), json!(c.passed), &s["passed"]);
            differ(
                format!("“{name}” meets_want"),
                json!(c.meets_want),
                &s["meets_want"],
            );
            differ(format!("“{name}” vacuous"), json!(c.vacuous), &s["vacuous"]);
            differ(format!("“{name}” matched"), json!(c.matched), &s["matched"]);
            differ(format!("“{name}” witness"), json!(c.witness), &s["witness"]);
        }
    }
    found
}

/// `v` with every number as a float: `2475` and `2475.0` are one time.
fn floats(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.iter().map(floats).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), floats(v))).collect())
        }
        other => other.clone(),
    }
}
