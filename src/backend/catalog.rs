//! Every published CLI version over both channels, and what a version spec resolves to.
//!
//! The catalog is the union of the claude-code package's versions and the versions only an
//! Agent SDK release carries (its `claudeCodeVersion`, with a platform package for this
//! machine), in semver order: never by publish time, which is not in version order on the
//! registry. A version the claude-code package has comes from it; otherwise from the newest
//! SDK release that declares it. `latest`, `latest~K` and every range (history, bisect, the
//! nightly workflow) read this one list; a version that is not in it is answered with the
//! nearest that are.

use std::collections::BTreeSet;

use semver::Version;

use super::channel::{Channel, ChannelName, Platform, version_with_channel};
use super::registry::{Answers, RegistryError};

/// A published version and the channel it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub version: Version,
    pub channel: Channel,
}

impl Release {
    /// `2.1.335 (agent-sdk 0.3.335)`, `2.1.332`
    pub fn describe(&self) -> String {
        version_with_channel(&self.version.to_string(), Some(&self.channel))
    }
}

/// A version only an SDK release carries, with no binary for this machine in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrunnable {
    pub version: Version,
    pub sdk_version: Version,
    /// The platforms it has packages for (none before SDK 0.2.113).
    pub platforms: Vec<String>,
}

/// How a version is asked for: `latest`, `latest~K` or an exact `X.Y.Z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    Latest { back: usize },
    Exact(Version),
}

impl Spec {
    pub fn parse(text: &str) -> Result<Spec, CatalogError> {
        let bad = || CatalogError::BadSpec(text.to_string());
        if let Some(rest) = text.strip_prefix("latest") {
            return match rest.strip_prefix('~') {
                Some(k) => k
                    .parse()
                    .map(|back| Spec::Latest { back })
                    .map_err(|_| bad()),
                None if rest.is_empty() => Ok(Spec::Latest { back: 0 }),
                None => Err(bad()),
            };
        }
        Version::parse(text).map(Spec::Exact).map_err(|_| bad())
    }

    /// This spec over any list in release order (the simulator's mapped versions, a stored
    /// history's): `latest~K` counts back from its end, an exact version stands for itself.
    pub fn pick(&self, text: &str, list: &[String]) -> Result<String, CatalogError> {
        match self {
            Spec::Exact(v) => Ok(v.to_string()),
            Spec::Latest { back } => list
                .len()
                .checked_sub(back + 1)
                .map(|i| list[i].clone())
                .ok_or_else(|| CatalogError::TooFarBack {
                    spec: text.to_string(),
                    count: list.len(),
                }),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("`{0}` is not a version (expected e.g. 2.1.332, latest or latest~3)")]
    BadSpec(String),
    #[error("`{spec}` goes back further than the {count} published versions")]
    TooFarBack { spec: String, count: usize },
    #[error("{version} is not published (neither by {} nor by {}){}", ChannelName::ClaudeCode, ChannelName::AgentSdk, nearest_text(.nearest))]
    NotPublished {
        version: Version,
        nearest: Vec<Release>,
    },
    #[error("{} comes only from Agent SDK {}, which has no native binary for {platform} ({}); pick another version, or pass --claude-bin PATH", .found.version, .found.sdk_version, platforms_text(&.found.platforms))]
    NoBinaryHere {
        found: Box<Unrunnable>,
        platform: String,
    },
    #[error("the Agent SDK has no native binaries for {0}, so only claude-code versions run here")]
    NoPlatform(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl CatalogError {
    /// Whether the mistake is in what was asked for (exit 2), not in the machine (exit 3).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            CatalogError::BadSpec(_)
                | CatalogError::TooFarBack { .. }
                | CatalogError::NotPublished { .. }
        )
    }
}

fn nearest_text(nearest: &[Release]) -> String {
    if nearest.is_empty() {
        return String::new();
    }
    let each: Vec<String> = nearest.iter().map(Release::describe).collect();
    format!(": the nearest are {}", each.join(", "))
}

fn platforms_text(platforms: &[String]) -> String {
    if platforms.is_empty() {
        "it ships no platform packages".into()
    } else {
        format!("it has {}", platforms.join(", "))
    }
}

/// The union of both channels for one platform, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    releases: Vec<Release>,
    unrunnable: Vec<Unrunnable>,
    platform: Result<Platform, String>,
}

impl Catalog {
    /// The catalog from the registry's answers, for `platform` (`Err`: a machine the SDK
    /// has no binaries for, named).
    pub fn build(answers: &Answers, platform: Result<Platform, String>) -> Catalog {
        let from_code: BTreeSet<&Version> = answers.claude_code.iter().collect();
        let mut releases: Vec<Release> = from_code
            .iter()
            .map(|v| Release {
                version: (*v).clone(),
                channel: Channel::ClaudeCode,
            })
            .collect();
        let mut sdk: Vec<_> = answers
            .agent_sdk
            .iter()
            .filter_map(|r| Some((r.cli_version.as_ref()?, r)))
            .filter(|(v, _)| !from_code.contains(v))
            .collect();
        // Newest SDK release first: where two declare one version, the newer one is kept.
        sdk.sort_by(|a, b| b.1.sdk_version.cmp(&a.1.sdk_version));
        let mut seen: BTreeSet<&Version> = BTreeSet::new();
        let mut unrunnable = Vec::new();
        for (version, release) in sdk {
            let package = platform.as_ref().ok().map(Platform::sdk_package);
            let here = package
                .as_ref()
                .and_then(|p| release.packages.get(p))
                .is_some_and(|pinned| *pinned == release.sdk_version.to_string());
            if here && seen.insert(version) {
                releases.push(Release {
                    version: version.clone(),
                    channel: Channel::AgentSdk {
                        sdk_version: release.sdk_version.to_string(),
                    },
                });
            } else if !here {
                unrunnable.push(Unrunnable {
                    version: version.clone(),
                    sdk_version: release.sdk_version.clone(),
                    platforms: release
                        .packages
                        .keys()
                        .filter_map(|p| p.strip_prefix("@anthropic-ai/claude-agent-sdk-"))
                        .map(str::to_string)
                        .collect(),
                });
            }
        }
        releases.sort_by(|a, b| a.version.cmp(&b.version));
        unrunnable.retain(|u| !seen.contains(&u.version));
        Catalog {
            releases,
            unrunnable,
            platform,
        }
    }

    /// The releases `latest` and ranges choose from, oldest first: pre-releases left out.
    fn stable(&self) -> impl DoubleEndedIterator<Item = &Release> {
        self.releases.iter().filter(|r| r.version.pre.is_empty())
    }

    /// Every release in semver order (pre-releases left out): what ranges run over.
    pub fn versions(&self) -> Vec<String> {
        self.stable().map(|r| r.version.to_string()).collect()
    }

    /// The newest release of one channel.
    pub fn last_of(&self, name: ChannelName) -> Option<&Release> {
        self.stable().rev().find(|r| r.channel.name() == name)
    }

    /// The release with this version, if either channel has it for this machine.
    pub fn get(&self, version: &str) -> Option<&Release> {
        let v = Version::parse(version).ok()?;
        self.releases.iter().find(|r| r.version == v)
    }

    /// What a spec stands for.
    pub fn resolve(&self, spec: &Spec) -> Result<&Release, CatalogError> {
        match spec {
            Spec::Latest { back } => {
                let count = self.stable().count();
                self.stable()
                    .rev()
                    .nth(*back)
                    .ok_or_else(|| CatalogError::TooFarBack {
                        spec: match back {
                            0 => "latest".into(),
                            k => format!("latest~{k}"),
                        },
                        count,
                    })
            }
            Spec::Exact(v) => self.exact(v),
        }
    }

    fn exact(&self, v: &Version) -> Result<&Release, CatalogError> {
        if let Some(release) = self.releases.iter().find(|r| r.version == *v) {
            return Ok(release);
        }
        if let Some(u) = self.unrunnable.iter().find(|u| u.version == *v) {
            return Err(match &self.platform {
                Err(machine) => CatalogError::NoPlatform(machine.clone()),
                Ok(p) => CatalogError::NoBinaryHere {
                    found: Box::new(u.clone()),
                    platform: p.name.clone(),
                },
            });
        }
        Err(CatalogError::NotPublished {
            version: v.clone(),
            nearest: self.nearest(v),
        })
    }

    /// The releases nearest to a missing version: the closest below and above it, and the
    /// last of a channel that ends before it (so `2.1.336` names `2.1.335 (agent-sdk
    /// 0.3.335)` and `2.1.332`, where the claude-code package stops). Newest first.
    pub fn nearest(&self, v: &Version) -> Vec<Release> {
        let below = self.stable().rev().find(|r| r.version < *v);
        let above = self.stable().find(|r| r.version > *v);
        let mut out: Vec<&Release> = below.into_iter().chain(above).collect();
        for name in [ChannelName::ClaudeCode, ChannelName::AgentSdk] {
            if let Some(last) = self.last_of(name).filter(|r| r.version < *v) {
                out.push(last);
            }
        }
        out.sort_by(|a, b| b.version.cmp(&a.version));
        out.dedup();
        out.into_iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::registry::tests::recorded;
    use crate::backend::registry::{SdkRelease, parse_claude_code};

    fn here() -> Catalog {
        Catalog::build(&recorded(), Ok(Platform::named("linux-x64")))
    }

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    fn resolve(catalog: &Catalog, spec: &str) -> Result<String, CatalogError> {
        catalog.resolve(&Spec::parse(spec)?).map(Release::describe)
    }

    #[test]
    fn the_union_holds_both_channels_in_semver_order() {
        let catalog = here();
        let versions = catalog.versions();
        // 473 claude-code versions, and the three builds only the SDK has for linux-x64.
        assert_eq!(versions.len(), 476);
        let mut sorted: Vec<Version> = versions.iter().map(|s| v(s)).collect();
        sorted.sort();
        assert_eq!(
            versions,
            sorted.iter().map(|v| v.to_string()).collect::<Vec<_>>()
        );
        assert_eq!(
            &versions[versions.len() - 5..],
            ["2.1.331", "2.1.332", "2.1.333", "2.1.334", "2.1.335"]
        );
        // 2.1.9 before 2.1.10: semver, not text.
        let (nine, ten) = (
            versions.iter().position(|x| x == "2.1.9").unwrap(),
            versions.iter().position(|x| x == "2.1.10").unwrap(),
        );
        assert!(nine < ten);
        assert_eq!(
            catalog.get("2.1.335").unwrap().channel,
            Channel::AgentSdk {
                sdk_version: "0.3.335".into()
            }
        );
        // A version both channels have comes from the claude-code package.
        assert_eq!(catalog.get("2.1.332").unwrap().channel, Channel::ClaudeCode);
        assert_eq!(catalog.get("2.1.300").unwrap().channel, Channel::ClaudeCode);
    }

    #[test]
    fn latest_and_latest_k_count_back_over_the_union() {
        let catalog = here();
        assert_eq!(
            resolve(&catalog, "latest").unwrap(),
            "2.1.335 (agent-sdk 0.3.335)"
        );
        assert_eq!(
            resolve(&catalog, "latest~2").unwrap(),
            "2.1.333 (agent-sdk 0.3.333)"
        );
        assert_eq!(resolve(&catalog, "latest~3").unwrap(), "2.1.332");
        assert_eq!(resolve(&catalog, "latest~475").unwrap(), "0.2.9");
        assert!(matches!(
            resolve(&catalog, "latest~476"),
            Err(CatalogError::TooFarBack { count: 476, .. })
        ));
        for bad in ["latest~x", "latestish", "2.1", "2.1.x", "2.1.3; rm -rf /"] {
            assert!(
                matches!(resolve(&catalog, bad), Err(CatalogError::BadSpec(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_range_over_the_catalog_includes_the_sdk_only_builds() {
        let versions = here().versions();
        let from = versions.iter().position(|x| x == "2.1.330").unwrap();
        assert_eq!(
            &versions[from..],
            [
                "2.1.330", "2.1.331", "2.1.332", "2.1.333", "2.1.334", "2.1.335"
            ]
        );
        let spec = Spec::parse("latest~1").unwrap();
        assert_eq!(spec.pick("latest~1", &versions).unwrap(), "2.1.334");
    }

    #[test]
    fn a_missing_version_names_the_nearest_that_exist() {
        let catalog = here();
        let err = resolve(&catalog, "2.1.336").unwrap_err();
        assert!(err.is_bad_input());
        assert_eq!(
            err.to_string(),
            "2.1.336 is not published (neither by the claude-code package \
             (@anthropic-ai/claude-code) nor by the Agent SDK (@anthropic-ai/claude-agent-sdk)): \
             the nearest are 2.1.335 (agent-sdk 0.3.335), 2.1.332"
        );
        // Between two claude-code versions (2.1.24 was never published).
        let between = resolve(&catalog, "2.1.24").unwrap_err().to_string();
        assert!(
            between.ends_with("the nearest are 2.1.25, 2.1.23"),
            "{between}"
        );
        let oldest = resolve(&catalog, "0.0.1").unwrap_err().to_string();
        assert!(oldest.ends_with("the nearest are 0.2.9"), "{oldest}");
    }

    #[test]
    fn an_sdk_only_version_without_a_binary_here_says_so() {
        // 2.1.66 is only in SDK 0.2.66, which predates the platform packages.
        let err = resolve(&here(), "2.1.66").unwrap_err();
        assert!(!err.is_bad_input(), "the machine's lack, exit 3");
        assert_eq!(
            err.to_string(),
            "2.1.66 comes only from Agent SDK 0.2.66, which has no native binary for linux-x64 \
             (it ships no platform packages); pick another version, or pass --claude-bin PATH"
        );
        // A platform the SDK has no package for: its builds are not in the union.
        let riscv = Catalog::build(&recorded(), Ok(Platform::named("linux-riscv64")));
        assert_eq!(riscv.versions().last().unwrap(), "2.1.332");
        let err = resolve(&riscv, "2.1.335").unwrap_err().to_string();
        assert!(
            err.contains("no native binary for linux-riscv64")
                && err.contains("it has darwin-arm64, darwin-x64, linux-arm64"),
            "{err}"
        );
        let nowhere = Catalog::build(&recorded(), Err("the processor `riscv64` on linux".into()));
        assert_eq!(
            resolve(&nowhere, "2.1.335").unwrap_err().to_string(),
            "the Agent SDK has no native binaries for the processor `riscv64` on linux, so only \
             claude-code versions run here"
        );
        assert_eq!(resolve(&nowhere, "latest").unwrap(), "2.1.332");
    }

    #[test]
    fn the_newer_sdk_release_wins_and_a_platform_pin_must_match() {
        let release = |sdk: &str, cli: &str, pinned: &str| SdkRelease {
            sdk_version: v(sdk),
            cli_version: Some(v(cli)),
            packages: [(
                "@anthropic-ai/claude-agent-sdk-linux-x64".to_string(),
                pinned.to_string(),
            )]
            .into(),
        };
        let answers = Answers {
            claude_code: parse_claude_code(br#"["2.1.1"]"#).unwrap(),
            agent_sdk: vec![
                release("0.3.9", "2.1.9", "0.3.9"),
                release("0.4.9", "2.1.9", "0.4.9"),
                release("0.3.8", "2.1.8", "0.3.7"),
                release("0.3.1", "2.1.1", "0.3.1"),
            ],
        };
        let catalog = Catalog::build(&answers, Ok(Platform::named("linux-x64")));
        assert_eq!(catalog.versions(), ["2.1.1", "2.1.9"]);
        assert_eq!(catalog.get("2.1.1").unwrap().channel, Channel::ClaudeCode);
        assert_eq!(
            catalog.get("2.1.9").unwrap().describe(),
            "2.1.9 (agent-sdk 0.4.9)"
        );
        assert!(matches!(
            catalog.resolve(&Spec::parse("2.1.8").unwrap()),
            Err(CatalogError::NoBinaryHere { .. })
        ));
    }
}
