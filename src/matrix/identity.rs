//! What makes a matrix this matrix (its `identity` in `matrix.json`): everything that decides
//! its verdicts besides the CLIs' behaviour. `merge` refuses shards whose identities differ in
//! anything (they are not one matrix); a baseline comparison refuses a baseline made another
//! way (another backend, other `--set` values, repeats or run settings), because a verdict that
//! moved would then say nothing about the CLI.
//!
//! A scenario's content is the SHA-256 of its file's bytes followed by those of the
//! `invariants.toml` beside it (both judge its runs). Raw bytes rather than the parsed form: a
//! hash anyone can check with `sha256sum` against the `scenario.toml` each run folder keeps,
//! that sees every byte whatever this version's parser reads of it, and that does not change
//! when wakeprobe's own types do. A comment edited between two shards refuses their merge;
//! shards of one nightly come from one checkout, so only a real difference does that.

use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::backend::channel::Channel;

/// One cell of a matrix, by key: a scenario variant on a CLI as asked for.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct CellKey {
    pub scenario: String,
    pub variant: String,
    pub cli_spec: String,
}

impl std::fmt::Display for CellKey {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}/{} on {}", self.scenario, self.variant, self.cli_spec)
    }
}

/// What a matrix ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MatrixBackend {
    /// Real Claude Code versions, installed from npm.
    RealCli,
    /// The simulator, a behaviour profile standing in for each version (`--sim-version`).
    Simulator,
}

impl MatrixBackend {
    fn words(self) -> &'static str {
        match self {
            MatrixBackend::RealCli => "on the real CLI",
            MatrixBackend::Simulator => "on the simulator",
        }
    }
}

/// A version as asked (`latest`) and the exact version it meant for this matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResolvedVersion {
    pub spec: String,
    pub version: String,
    /// The channel it came from, when the invocation knew it before running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
}

impl ResolvedVersion {
    fn text(&self) -> String {
        crate::backend::channel::version_with_channel(&self.version, self.channel.as_ref())
    }
}

/// A scenario's content: the SHA-256 of its file and of the `invariants.toml` beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioContent {
    pub name: String,
    pub sha256: String,
}

impl ScenarioContent {
    /// The content of a scenario, from its text and its folder's invariants (if any).
    pub fn of(name: &str, source: &str, invariants: Option<&str>) -> ScenarioContent {
        let mut hasher = sha2::Sha256::new();
        hasher.update(source.as_bytes());
        if let Some(text) = invariants {
            hasher.update(text.as_bytes());
        }
        let sha256 = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        ScenarioContent {
            name: name.to_string(),
            sha256,
        }
    }
}

/// A scenario variant the matrix leaves out on purpose, on every version, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LeftOut {
    pub scenario: String,
    pub variant: String,
    pub why: String,
}

/// What makes a matrix this matrix. Every shard of one matrix records the same identity.
/// Fields absent in files of an older wakeprobe read as empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Identity {
    /// The wakeprobe version that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeprobe: Option<String>,
    /// Real CLI or simulator (older files: the simulator when `sim_versions` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<MatrixBackend>,
    /// The versions as asked for (`latest` stays `latest`).
    pub versions: Vec<String>,
    /// What each version resolved to (the real CLI only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<ResolvedVersion>,
    /// The scenarios' names.
    pub scenarios: Vec<String>,
    /// Each scenario's content, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contents: Vec<ScenarioContent>,
    /// The `--variant` filter (empty: every variant).
    pub variants: Vec<String>,
    /// The `--set` values, `KEY=VALUE`.
    pub sets: Vec<String>,
    /// `--sim-version` mappings, `VERSION=PROFILE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sim_versions: Vec<String>,
    /// The flags that change how every run is made, as written: `--driver`, `--explore`,
    /// `--fault`, `--cli-arg`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<String>,
    /// The Agent SDK releases the SDK-driven variants run through, when there are any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sdk: Vec<String>,
    /// Runs per cell.
    pub repeat: u32,
    /// Every cell of the whole matrix (all shards together), sorted.
    pub cells: Vec<CellKey>,
    /// Variants left out on purpose (the simulator cannot run the SDK drivers): a merge
    /// without them is complete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
}

/// What an invocation asks for, from which its identity is made.
pub struct Asked<'a> {
    pub scenarios: &'a [std::sync::Arc<crate::scenario::Scenario>],
    /// The `--variant` filter (empty: every variant).
    pub variants: &'a [String],
    pub sets: &'a [(String, String)],
    /// Each chosen variant (scenario, variant) with the SDK host its resolved plan drives it
    /// through, if any: read from the plans the invocation resolved once.
    pub planned: &'a [(String, String, Option<crate::scenario::mode::Host>)],
    /// Each version as asked, with the exact version it resolved to (itself on the simulator)
    /// and the channel when the invocation knew it.
    pub versions: &'a [(String, String, Option<Channel>)],
    pub sim_versions: &'a [(String, String)],
    pub settings: Vec<String>,
    pub sdk: &'a crate::backend::sdk::SdkVersions,
    pub repeat: u32,
}

impl Identity {
    /// The identity of the whole matrix `asked` asks for, whichever shard of it runs: every
    /// cell, and the variants left out by design (an SDK-driven variant on the simulator).
    pub fn of(asked: &Asked) -> Identity {
        let simulated = !asked.sim_versions.is_empty();
        let mut cells = Vec::new();
        let mut left_out = Vec::new();
        let mut hosts = Vec::new();
        for (scenario, variant, host) in asked.planned {
            if simulated && host.is_some() {
                left_out.push(LeftOut {
                    scenario: scenario.clone(),
                    variant: variant.clone(),
                    why: crate::driver::SIM_SPEAKS_NO_SDK.to_string(),
                });
                continue;
            }
            hosts.extend(*host);
            cells.extend(asked.versions.iter().map(|(spec, _, _)| CellKey {
                scenario: scenario.clone(),
                variant: variant.clone(),
                cli_spec: spec.clone(),
            }));
        }
        cells.sort();
        hosts.sort_by_key(|h| *h as u8);
        hosts.dedup();
        let pairs = |v: &[(String, String)]| v.iter().map(|(k, x)| format!("{k}={x}")).collect();
        Identity {
            wakeprobe: Some(env!("CARGO_PKG_VERSION").to_string()),
            backend: Some(if simulated {
                MatrixBackend::Simulator
            } else {
                MatrixBackend::RealCli
            }),
            versions: asked.versions.iter().map(|(s, _, _)| s.clone()).collect(),
            resolved: match simulated {
                true => vec![],
                false => asked
                    .versions
                    .iter()
                    .map(|(spec, version, channel)| ResolvedVersion {
                        spec: spec.clone(),
                        version: version.clone(),
                        channel: channel.clone(),
                    })
                    .collect(),
            },
            scenarios: asked.scenarios.iter().map(|s| s.name.clone()).collect(),
            contents: asked
                .scenarios
                .iter()
                .map(|s| ScenarioContent::of(&s.name, &s.source, s.invariants_source()))
                .collect(),
            variants: asked.variants.to_vec(),
            sets: pairs(asked.sets),
            sim_versions: pairs(asked.sim_versions),
            settings: asked.settings.clone(),
            sdk: hosts.iter().map(|h| sdk_release(*h, asked.sdk)).collect(),
            repeat: asked.repeat,
            cells,
            left_out,
        }
    }
}

/// `--resolve SPEC=VERSION`: SPEC is one of the versions asked and stands for another
/// (`latest`, `latest~K`), VERSION is exact, and the CLI a real one; else what is wrong.
pub fn check_pins(
    versions: &[String],
    sim_versions: &[(String, String)],
    pinned: &[(String, String)],
) -> Result<(), String> {
    use crate::backend::catalog::Spec;
    if !pinned.is_empty() && !sim_versions.is_empty() {
        return Err(
            "--resolve names real versions; with --sim-version every version is a simulator profile"
                .into(),
        );
    }
    for (spec, version) in pinned {
        let why = if !versions.contains(spec) {
            Some("not one of --versions")
        } else if !matches!(Spec::parse(spec), Ok(Spec::Latest { .. })) {
            Some("only `latest` and `latest~K` stand for another version")
        } else if !matches!(Spec::parse(version), Ok(Spec::Exact(_))) {
            Some("expected an exact version such as 2.1.337")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(format!("--resolve {spec}={version}: {why}"));
        }
    }
    Ok(())
}

/// `typescript 0.3.337`, `python 0.1.70`: an Agent SDK release as the identity records it.
fn sdk_release(
    host: crate::scenario::mode::Host,
    sdk: &crate::backend::sdk::SdkVersions,
) -> String {
    let language = match host {
        crate::scenario::mode::Host::SdkTs => "typescript",
        crate::scenario::mode::Host::SdkPy => "python",
    };
    format!("{language} {}", sdk.of(host))
}

/// A list as the difference names it.
fn list(v: &[String]) -> String {
    if v.is_empty() {
        "(none)".to_string()
    } else {
        v.join(",")
    }
}

impl Identity {
    /// The backend, recorded or (older files) told by the simulator mappings.
    pub fn backend(&self) -> MatrixBackend {
        self.backend.unwrap_or(if self.sim_versions.is_empty() {
            MatrixBackend::RealCli
        } else {
            MatrixBackend::Simulator
        })
    }

    /// The first thing in which two shards' identities differ, in words (`None`: the same).
    pub fn difference(&self, other: &Identity) -> Option<String> {
        let checks: [fn(&Identity, &Identity) -> Option<String>; 5] = [
            |a, b| {
                (a.wakeprobe != b.wakeprobe).then(|| {
                    let v = |w: &Option<String>| w.clone().unwrap_or_else(|| "(older)".into());
                    format!(
                        "made by wakeprobe {} vs {}",
                        v(&a.wakeprobe),
                        v(&b.wakeprobe)
                    )
                })
            },
            |a, b| {
                (a.backend() != b.backend())
                    .then(|| format!("run {} vs {}", a.backend().words(), b.backend().words()))
            },
            Identity::listed_difference,
            Identity::resolved_difference,
            Identity::content_difference,
        ];
        checks
            .iter()
            .find_map(|check| check(self, other))
            .or_else(|| self.plan_difference(other))
    }

    /// The lists, compared as written.
    fn listed_difference(&self, other: &Identity) -> Option<String> {
        let fields: [(&str, &[String], &[String]); 7] = [
            ("versions", &self.versions, &other.versions),
            ("scenarios", &self.scenarios, &other.scenarios),
            ("variants", &self.variants, &other.variants),
            ("--set values", &self.sets, &other.sets),
            (
                "--sim-version mappings",
                &self.sim_versions,
                &other.sim_versions,
            ),
            ("run settings", &self.settings, &other.settings),
            ("Agent SDK releases", &self.sdk, &other.sdk),
        ];
        fields
            .iter()
            .find(|(_, a, b)| a != b)
            .map(|(what, a, b)| format!("{what} {} vs {}", list(a), list(b)))
    }

    /// A version asked alike that resolved to another one (`latest` moved between shards).
    fn resolved_difference(&self, other: &Identity) -> Option<String> {
        for a in &self.resolved {
            let b = other.resolved.iter().find(|b| b.spec == a.spec);
            let differs = match b {
                None => true,
                Some(b) => {
                    a.version != b.version
                        || (a.channel.is_some() && b.channel.is_some() && a.channel != b.channel)
                }
            };
            if differs {
                let theirs = b.map_or_else(|| "nothing recorded".to_string(), |b| b.text());
                return Some(format!("`{}` resolved to {} vs {theirs}", a.spec, a.text()));
            }
        }
        (self.resolved.len() != other.resolved.len())
            .then(|| "one records the versions it resolved, the other does not".to_string())
    }

    /// A scenario whose file (or invariants) differ between the two.
    fn content_difference(&self, other: &Identity) -> Option<String> {
        for a in &self.contents {
            match other.contents.iter().find(|b| b.name == a.name) {
                Some(b) if b.sha256 == a.sha256 => {}
                Some(b) => {
                    return Some(format!(
                        "scenario {} differs in content (sha256 {} vs {}): its file or the invariants.toml beside it changed",
                        a.name,
                        &a.sha256[..12.min(a.sha256.len())],
                        &b.sha256[..12.min(b.sha256.len())]
                    ));
                }
                None => {
                    return Some(format!(
                        "the content of scenario {} is recorded in one only",
                        a.name
                    ));
                }
            }
        }
        (self.contents.len() != other.contents.len())
            .then(|| "one records its scenarios' contents, the other does not".to_string())
    }

    /// Repeats, the cells, and what was left out.
    fn plan_difference(&self, other: &Identity) -> Option<String> {
        if self.repeat != other.repeat {
            return Some(format!("--repeat {} vs {}", self.repeat, other.repeat));
        }
        if self.left_out != other.left_out {
            return Some(format!(
                "left out {} vs {} variants",
                self.left_out.len(),
                other.left_out.len()
            ));
        }
        (self.cells != other.cells).then(|| {
            format!(
                "cell lists of {} and {} cells",
                self.cells.len(),
                other.cells.len()
            )
        })
    }

    /// [`Identity::made_unlike`] a baseline's identity; a baseline with none (an older
    /// wakeprobe's) is unlike any: how it was made is unknown.
    pub fn made_unlike_baseline(&self, baseline: Option<&Identity>) -> Vec<String> {
        match baseline {
            Some(theirs) => self.made_unlike(theirs),
            None => vec![
                "the baseline records no identity (an older wakeprobe wrote it): how it was made is unknown"
                    .to_string(),
            ],
        }
    }

    /// How this matrix was made differently from `baseline`, in the ways that make their
    /// verdicts incomparable: the backend, the `--set` values, the repeats, the run settings.
    /// Versions, scenarios and profiles may differ: comparing them is the point (a simulator
    /// profile stands for a version's behaviour, as the version a spec resolves to does).
    pub fn made_unlike(&self, baseline: &Identity) -> Vec<String> {
        let mut out = Vec::new();
        if self.backend() != baseline.backend() {
            out.push(format!(
                "the baseline was made {}, this matrix {}",
                baseline.backend().words(),
                self.backend().words()
            ));
        }
        let fields: [(&str, &[String], &[String]); 2] = [
            ("--set values", &baseline.sets, &self.sets),
            ("run settings", &baseline.settings, &self.settings),
        ];
        for (what, before, now) in fields {
            if before != now {
                out.push(format!(
                    "{what}: {} in the baseline, {} here",
                    list(before),
                    list(now)
                ));
            }
        }
        if self.repeat != baseline.repeat {
            out.push(format!(
                "--repeat: {} in the baseline, {} here",
                baseline.repeat, self.repeat
            ));
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn identity(versions: &[&str]) -> Identity {
        Identity {
            wakeprobe: Some("0.1.0".into()),
            backend: Some(MatrixBackend::RealCli),
            versions: versions.iter().map(|v| v.to_string()).collect(),
            resolved: vec![],
            scenarios: vec!["a".into()],
            contents: vec![ScenarioContent::of("a", "name = \"a\"", None)],
            variants: vec![],
            sets: vec!["bg_seconds=1".into()],
            sim_versions: vec![],
            settings: vec![],
            sdk: vec![],
            repeat: 1,
            cells: versions
                .iter()
                .map(|v| CellKey {
                    scenario: "a".into(),
                    variant: "print".into(),
                    cli_spec: v.to_string(),
                })
                .collect(),
            left_out: vec![],
        }
    }

    /// `merge` names the first thing in which two shards' matrices differ.
    #[test]
    fn two_matrices_differ_by_their_first_differing_field() {
        let id = identity(&["1", "2"]);
        let differs = |change: &dyn Fn(&mut Identity)| {
            let mut other = id.clone();
            change(&mut other);
            id.difference(&other)
        };
        assert_eq!(id.difference(&id.clone()), None);
        type Change = Box<dyn Fn(&mut Identity)>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|o| o.wakeprobe = Some("0.2.0".into())),
                "made by wakeprobe 0.1.0 vs 0.2.0",
            ),
            (
                Box::new(|o| o.backend = Some(MatrixBackend::Simulator)),
                "run on the real CLI vs on the simulator",
            ),
            (
                Box::new(|o| o.scenarios = vec!["a".into(), "b".into()]),
                "scenarios a vs a,b",
            ),
            (
                Box::new(|o| o.variants = vec!["print".into()]),
                "variants (none) vs print",
            ),
            (
                Box::new(|o| o.sets.clear()),
                "--set values bg_seconds=1 vs (none)",
            ),
            (
                Box::new(|o| o.sim_versions = vec!["2.1.9=fixed".into()]),
                "--sim-version mappings (none) vs 2.1.9=fixed",
            ),
            (
                Box::new(|o| o.settings = vec!["--explore".into()]),
                "run settings (none) vs --explore",
            ),
            (
                Box::new(|o| o.sdk = vec!["typescript 0.3.337".into()]),
                "Agent SDK releases (none) vs typescript 0.3.337",
            ),
            (Box::new(|o| o.repeat = 3), "--repeat 1 vs 3"),
            (
                Box::new(|o| {
                    o.cells.pop();
                }),
                "cell lists of 2 and 1 cells",
            ),
            (
                Box::new(|o| {
                    o.left_out.push(LeftOut {
                        scenario: "s".into(),
                        variant: "typescript".into(),
                        why: "sdk".into(),
                    })
                }),
                "left out 0 vs 1 variants",
            ),
        ];
        for (change, says) in cases {
            assert_eq!(differs(&*change).as_deref(), Some(says));
        }
    }

    /// A scenario whose file changed is named, with both hashes' beginnings; so is the
    /// invariants file beside it, which judges its runs too.
    #[test]
    fn a_changed_scenario_or_invariants_file_is_a_different_matrix() {
        let id = identity(&["1"]);
        let mut edited = id.clone();
        edited.contents = vec![ScenarioContent::of("a", "name = \"a\" # edited", None)];
        let e = id.difference(&edited).unwrap();
        assert!(
            e.starts_with("scenario a differs in content (sha256 "),
            "{e}"
        );
        let mut invariants = id.clone();
        invariants.contents = vec![ScenarioContent::of("a", "name = \"a\"", Some("x"))];
        assert!(id.difference(&invariants).is_some());
        assert_eq!(
            ScenarioContent::of("a", "", None).sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256sum of nothing"
        );
    }

    /// `latest` resolved to another version in one shard: named with both versions. A
    /// channel is compared only where both shards recorded one.
    #[test]
    fn a_version_resolved_otherwise_is_a_different_matrix() {
        let with = |version: &str, channel: Option<Channel>| {
            let mut id = identity(&["latest"]);
            id.resolved = vec![ResolvedVersion {
                spec: "latest".into(),
                version: version.into(),
                channel,
            }];
            id
        };
        let sdk = |v: &str| {
            Some(Channel::AgentSdk {
                sdk_version: v.into(),
            })
        };
        assert_eq!(
            with("2.1.337", sdk("0.3.337"))
                .difference(&with("2.1.338", sdk("0.3.338")))
                .as_deref(),
            Some("`latest` resolved to 2.1.337 (agent-sdk 0.3.337) vs 2.1.338 (agent-sdk 0.3.338)")
        );
        assert_eq!(
            with("2.1.337", sdk("0.3.337")).difference(&with("2.1.337", None)),
            None
        );
        assert!(
            with("2.1.337", None)
                .difference(&identity(&["latest"]))
                .is_some()
        );
    }

    /// A baseline is refused for the backend, `--set` values, repeats and run settings; the
    /// versions, scenarios and simulator profiles are what a comparison compares.
    #[test]
    fn a_baseline_made_another_way_is_named_by_how() {
        let base = identity(&["1"]);
        let mut now = base.clone();
        assert_eq!(now.made_unlike(&base), Vec::<String>::new());
        now.versions = vec!["2".into()];
        now.sim_versions = vec!["1=fixed".into()];
        now.backend = Some(MatrixBackend::Simulator);
        assert_eq!(
            now.made_unlike(&base),
            ["the baseline was made on the real CLI, this matrix on the simulator"]
        );
        now.backend = Some(MatrixBackend::RealCli);
        now.sets = vec!["bg_seconds=2".into()];
        now.repeat = 3;
        now.settings = vec!["--explore".into()];
        assert_eq!(
            now.made_unlike(&base),
            [
                "--set values: bg_seconds=1 in the baseline, bg_seconds=2 here",
                "run settings: (none) in the baseline, --explore here",
                "--repeat: 1 in the baseline, 3 here",
            ]
        );
        let mut old = base.clone();
        old.backend = None;
        old.sim_versions = vec!["1=fixed".into()];
        assert_eq!(
            old.backend(),
            MatrixBackend::Simulator,
            "told by its mappings"
        );
        assert!(base.made_unlike_baseline(None)[0].contains("records no identity"));
    }

    /// `--resolve` takes `latest` and `latest~K` among the versions asked, to exact versions,
    /// on the real CLI only.
    #[test]
    fn a_pin_is_a_latest_spec_asked_for_to_an_exact_version() {
        let versions: Vec<String> = ["2.1.219", "latest~3", "latest"].map(String::from).into();
        let pin = |s: &str, v: &str| vec![(s.to_string(), v.to_string())];
        assert_eq!(
            check_pins(&versions, &[], &pin("latest", "2.1.337")),
            Ok(())
        );
        assert_eq!(
            check_pins(&versions, &[], &pin("latest~3", "2.1.334")),
            Ok(())
        );
        for (spec, version, says) in [
            ("latest~1", "2.1.336", "not one of --versions"),
            ("2.1.219", "2.1.220", "only `latest` and `latest~K`"),
            ("latest", "latest~2", "expected an exact version"),
        ] {
            let e = check_pins(&versions, &[], &pin(spec, version)).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        let sim = pin("latest", "fixed");
        assert!(check_pins(&versions, &sim, &pin("latest", "2.1.337")).is_err());
    }
}
