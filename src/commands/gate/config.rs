//! `locklab gate`'s config file (TOML, in the user's repository): the client command,
//! the scenarios, and per scenario what must hold. Every mistake is an error naming
//! the file, the line and the key, found before any server starts.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use locklab_jepsen::external::{ExternalClient, INIT_TIMEOUT, REPLY_TIMEOUT};
use locklab_jepsen::random::RandomNemesis;
use locklab_traces::check::Property;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// What must hold in a scenario's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Requirement {
    /// The run keeps every property the model says the scenario's protocol keeps (a
    /// property the model breaks may hold: a safer lock passes), none left unknown. The
    /// default.
    AtLeastAsSafeAsModel,
    /// The run keeps exactly what the model says the scenario keeps and breaks what it
    /// breaks, property by property, with no property left unknown.
    AgreesWithModel,
    /// No check of the history found a violation, compared with the model or not.
    NoViolation,
    /// No two clients in their critical sections at once.
    MutualExclusion,
    /// The lock operations are a behaviour of the lock spec.
    LockLinearizability,
    /// No client releases a lock it does not hold.
    NoForeignRelease,
    /// The counter's operations linearize.
    ResourceLinearizability,
    /// No update lost.
    ResourceSafety,
    /// Accepted writes never carry an older token.
    Fencing,
    /// After the run's fault, the lock was granted again wherever the model says the
    /// protocol is eventually free (a run watches for seconds: within its horizon).
    AtLeastAsLiveAsModel,
    /// Grants followed request order wherever the model says `fifo` holds (a grant
    /// that passed over an earlier numbered request is a proven failure), and nobody
    /// waited through more grants of others than a queue allows wherever the model
    /// says `starvation-free` holds (within the run: a long wait is unknown, never a
    /// failure, since it proves no "for ever").
    AtLeastAsFairAsModel,
}

impl Requirement {
    /// Its spelling in the config and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Requirement::AtLeastAsSafeAsModel => "at-least-as-safe-as-model",
            Requirement::AgreesWithModel => "agrees-with-model",
            Requirement::NoViolation => "no-violation",
            Requirement::MutualExclusion => "mutual-exclusion",
            Requirement::LockLinearizability => "lock-linearizability",
            Requirement::NoForeignRelease => "no-foreign-release",
            Requirement::ResourceLinearizability => "resource-linearizability",
            Requirement::ResourceSafety => "resource-safety",
            Requirement::Fencing => "fencing",
            Requirement::AtLeastAsLiveAsModel => "at-least-as-live-as-model",
            Requirement::AtLeastAsFairAsModel => "at-least-as-fair-as-model",
        }
    }

    /// The history check that must say "holds" (none for the model comparisons and
    /// `no-violation`, which read every check).
    pub fn property(self) -> Option<Property> {
        match self {
            Requirement::AtLeastAsSafeAsModel
            | Requirement::AgreesWithModel
            | Requirement::NoViolation
            | Requirement::AtLeastAsLiveAsModel
            | Requirement::AtLeastAsFairAsModel => None,
            Requirement::MutualExclusion => Some(Property::MutualExclusion),
            Requirement::LockLinearizability => Some(Property::LockLinearizability),
            Requirement::NoForeignRelease => Some(Property::NoForeignRelease),
            Requirement::ResourceLinearizability => Some(Property::ResourceLinearizability),
            Requirement::ResourceSafety => Some(Property::ResourceSafety),
            Requirement::Fencing => Some(Property::Fencing),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: Option<String>,
    client: Spanned<Vec<String>>,
    #[serde(default)]
    options: RawOptions,
    #[serde(default)]
    scenario: Vec<RawScenario>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOptions {
    seed: Option<u64>,
    clients: Option<Spanned<usize>>,
    duration: Option<Spanned<f64>>,
    reply_timeout: Option<Spanned<f64>>,
    init_timeout: Option<Spanned<f64>>,
    check_timeout: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    id: Spanned<String>,
    client: Option<Spanned<Vec<String>>>,
    require: Option<Spanned<Vec<Requirement>>>,
    nemesis: Option<Spanned<String>>,
    rounds: Option<Spanned<u32>>,
    shrink_runs: Option<Spanned<u32>>,
}

/// One scenario to run, and what must hold in it.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The catalog id.
    pub id: String,
    /// The client it runs with.
    pub client: ExternalClient,
    /// What must hold.
    pub require: Vec<Requirement>,
    /// `nemesis = "random[:kinds]"`: faults drawn at random instead of the row's plan.
    pub nemesis: Option<RandomNemesis>,
    /// Runs of the scenario, each with its own seed (random rounds; 1 without a
    /// nemesis).
    pub rounds: u32,
}

/// A config, checked.
#[derive(Clone, Debug)]
pub struct Config {
    /// The lock's name in reports.
    pub name: String,
    /// Seed of every run.
    pub seed: u64,
    /// Clients per run (default: each scenario's).
    pub clients: Option<usize>,
    /// Run length (default: each scenario's).
    pub duration: Option<Duration>,
    /// Time the checks of one history may take.
    pub check_timeout: Duration,
    /// The scenarios, in the file's order.
    pub scenarios: Vec<Scenario>,
}

/// The check budget unless the config says otherwise: what `locklab run` allows.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// `path`'s config, or an error naming the line and key.
pub fn load(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // Relative paths in the client command are the config's: it lives in the
    // user's repository beside their client.
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    parse(&text, &dir).map_err(|e| format!("{}:{e}", path.display()))
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

/// Parses `text`; relative client programs are looked up in `dir`. Errors start with
/// the line number (`12: scenario.id: …`).
pub fn parse(text: &str, dir: &Path) -> Result<Config, String> {
    let at = |span: Range<usize>, key: &str, msg: String| {
        format!("{}: {key}: {msg}", line_of(text, span.start))
    };
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        format!("{line}: {}", e.message().trim())
    })?;
    let seconds = |v: &Option<Spanned<f64>>, key: &str| -> Result<Option<Duration>, String> {
        match v {
            None => Ok(None),
            Some(s) if s.get_ref().is_finite() && *s.get_ref() > 0.0 && *s.get_ref() <= 600.0 => {
                Ok(Some(Duration::from_secs_f64(*s.get_ref())))
            }
            Some(s) => Err(at(
                s.span(),
                key,
                format!("expected seconds in (0, 600], got {}", s.get_ref()),
            )),
        }
    };
    let o = &raw.options;
    let duration = seconds(&o.duration, "options.duration")?;
    let reply_timeout =
        seconds(&o.reply_timeout, "options.reply_timeout")?.unwrap_or(REPLY_TIMEOUT);
    let init_timeout = seconds(&o.init_timeout, "options.init_timeout")?.unwrap_or(INIT_TIMEOUT);
    let check_timeout =
        seconds(&o.check_timeout, "options.check_timeout")?.unwrap_or(CHECK_TIMEOUT);
    if let Some(c) = &o.clients {
        if !(2..=64).contains(c.get_ref()) {
            return Err(at(
                c.span(),
                "options.clients",
                format!("expected 2 to 64 clients, got {}", c.get_ref()),
            ));
        }
    }
    let client = |command: &Spanned<Vec<String>>, key: &str| -> Result<ExternalClient, String> {
        let mut c = ExternalClient::new(command.get_ref().clone())
            .map_err(|e| at(command.span(), key, e))?;
        c.dir = Some(dir.to_path_buf());
        c.reply_timeout = reply_timeout;
        c.init_timeout = init_timeout;
        c.check_program().map_err(|e| at(command.span(), key, e))?;
        Ok(c)
    };
    let default_client = client(&raw.client, "client")?;
    if raw.scenario.is_empty() {
        return Err(
            "1: scenario: no [[scenario]] tables: name at least one scenario to run".into(),
        );
    }
    let runnable: Vec<&'static str> = locklab_jepsen::runnable().iter().map(|p| p.id).collect();
    let mut scenarios = Vec::new();
    for s in &raw.scenario {
        let id = s.id.get_ref();
        if !runnable.contains(&id.as_str()) {
            let why = if locklab_jepsen::registry::inventory_ids().any(|i| i == id) {
                format!("{id} runs buyers, not a lock: it cannot gate a lock client")
            } else {
                format!(
                    "unknown scenario {id:?}; these run on real servers with a client: {}",
                    runnable.join(", ")
                )
            };
            return Err(at(s.id.span(), "scenario.id", why));
        }
        // Without `require`, the question a CI gate asks: does the lock keep at least
        // what the model says the protocol keeps.
        let require = match &s.require {
            None => vec![Requirement::AtLeastAsSafeAsModel],
            Some(r) if r.get_ref().is_empty() => {
                return Err(at(
                    r.span(),
                    "scenario.require",
                    "name at least one requirement (at-least-as-safe-as-model, mutual-exclusion, …), or leave require out for at-least-as-safe-as-model".into(),
                ));
            }
            Some(r) if has_repeats(r.get_ref()) => {
                return Err(at(
                    r.span(),
                    "scenario.require",
                    "a requirement is named twice".into(),
                ));
            }
            Some(r) => r.get_ref().clone(),
        };
        let client = match &s.client {
            Some(c) => client(c, "scenario.client")?,
            None => default_client.clone(),
        };
        let nemesis = s
            .nemesis
            .as_ref()
            .map(|n| {
                RandomNemesis::parse(n.get_ref()).map_err(|e| at(n.span(), "scenario.nemesis", e))
            })
            .transpose()?;
        let nemesis = match (nemesis, &s.shrink_runs) {
            (Some(n), Some(r)) => Some(RandomNemesis {
                shrink_runs: *r.get_ref(),
                ..n
            }),
            (None, Some(r)) => {
                return Err(at(
                    r.span(),
                    "scenario.shrink_runs",
                    "shrink_runs shrinks what a random nemesis finds: add nemesis = \"random\""
                        .into(),
                ))
            }
            (n, None) => n,
        };
        let rounds = match &s.rounds {
            None => 1,
            Some(r) if nemesis.is_none() => {
                return Err(at(
                    r.span(),
                    "scenario.rounds",
                    "rounds repeat a random nemesis with new seeds: add nemesis = \"random\""
                        .into(),
                ))
            }
            Some(r) if (1..=100).contains(r.get_ref()) => *r.get_ref(),
            Some(r) => {
                return Err(at(
                    r.span(),
                    "scenario.rounds",
                    format!("expected 1 to 100 rounds, got {}", r.get_ref()),
                ))
            }
        };
        scenarios.push(Scenario {
            id: id.clone(),
            client,
            require,
            nemesis,
            rounds,
        });
    }
    Ok(Config {
        name: raw.name.unwrap_or_else(|| default_client.command.join(" ")),
        seed: o.seed.unwrap_or(1),
        clients: o.clients.as_ref().map(|c| *c.get_ref()),
        duration,
        check_timeout,
        scenarios,
    })
}

fn has_repeats(items: &[Requirement]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, r)| items[i + 1..].contains(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text, Path::new("/")).expect_err("a bad config")
    }

    const SH: &str = "client = [\"/bin/sh\", \"client.sh\"]\n";

    #[test]
    fn a_good_config_reads_with_its_defaults() {
        let c = parse(
            &format!("{SH}[options]\nseed = 7\nduration = 2.5\n\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"agrees-with-model\", \"mutual-exclusion\"]\n\n[[scenario]]\nid = \"redis-lua-pause\"\nclient = [\"/bin/sh\", \"other.sh\"]\nrequire = [\"no-foreign-release\", \"at-least-as-live-as-model\"]\n"),
            Path::new("/repo"),
        )
        .expect("parses");
        assert_eq!(c.seed, 7);
        assert_eq!(c.duration, Some(Duration::from_millis(2500)));
        assert_eq!(c.name, "/bin/sh client.sh");
        assert_eq!(c.scenarios.len(), 2);
        assert_eq!(
            c.scenarios[0].require,
            vec![Requirement::AgreesWithModel, Requirement::MutualExclusion]
        );
        assert_eq!(
            c.scenarios[0].client.dir.as_deref(),
            Some(Path::new("/repo"))
        );
        assert_eq!(c.scenarios[1].client.command[1], "other.sh");
        assert_eq!(
            c.scenarios[1].require,
            vec![
                Requirement::NoForeignRelease,
                Requirement::AtLeastAsLiveAsModel
            ]
        );
        assert_eq!(c.scenarios[0].client.reply_timeout, REPLY_TIMEOUT);

        let c = parse(
            &format!("{SH}[[scenario]]\nid = \"redis-lua-pause\"\n"),
            Path::new("/repo"),
        )
        .expect("parses");
        assert_eq!(
            c.scenarios[0].require,
            vec![Requirement::AtLeastAsSafeAsModel],
            "the default requirement"
        );
        assert_eq!(
            (c.scenarios[0].nemesis.as_ref(), c.scenarios[0].rounds),
            (None, 1)
        );

        let c = parse(
            &format!("{SH}[[scenario]]\nid = \"redis-lua\"\nnemesis = \"random:pause\"\nrounds = 3\nshrink_runs = 4\n"),
            Path::new("/repo"),
        )
        .expect("parses");
        let n = c.scenarios[0].nemesis.as_ref().expect("a random nemesis");
        assert_eq!(
            n.kinds.as_deref(),
            Some(&[locklab_models::registry::Fault::Pause][..])
        );
        assert_eq!((n.shrink_runs, c.scenarios[0].rounds), (4, 3));
    }

    #[test]
    fn every_mistake_names_its_line_and_key() {
        let e = err(&format!(
            "{SH}[[scenario]]\nid = \"redis-luaa\"\nrequire = [\"agrees-with-model\"]\n"
        ));
        assert!(
            e.starts_with("3: scenario.id:") && e.contains("redis-lua,"),
            "{e}"
        );
        let e = err(&format!(
            "{SH}[[scenario]]\nid = \"redis-lua\"\nrequire = [\"mutual-exclusio\"]\n"
        ));
        assert!(e.starts_with("4:") && e.contains("mutual-exclusio"), "{e}");
        let e = err(&format!("{SH}[options]\nduration = -1.0\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"fencing\"]\n"));
        assert!(e.starts_with("3: options.duration:"), "{e}");
        let e = err(&format!("{SH}[options]\nclients = 1\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"fencing\"]\n"));
        assert!(e.starts_with("3: options.clients:"), "{e}");
        let e = err(&format!("{SH}colour = 1\n"));
        assert!(e.starts_with("2:") && e.contains("colour"), "{e}");
        let e = err("client = \"python3 x.py\"\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"fencing\"]\n");
        assert!(e.starts_with("1:"), "{e}");
        let e = err("client = [\"no-such-program-here\"]\n[[scenario]]\nid = \"redis-lua\"\nrequire = [\"fencing\"]\n");
        assert!(e.starts_with("1: client:") && e.contains("PATH"), "{e}");
        let e = err("client = []\n");
        assert!(e.starts_with("1: client:") && e.contains("empty"), "{e}");
        let e = err(SH);
        assert!(e.contains("[[scenario]]"), "{e}");
        let e = err(&format!(
            "{SH}[[scenario]]\nid = \"inventory-no-lock\"\nrequire = [\"fencing\"]\n"
        ));
        assert!(e.contains("buyers"), "{e}");
        let e = err(&format!(
            "{SH}[[scenario]]\nid = \"redis-lua\"\nrequire = []\n"
        ));
        assert!(e.starts_with("4: scenario.require:"), "{e}");
        let e = err(&format!("{SH}[[scenario]]\nid = \"redis-lua\"\nrequire = [\"fencing\", \"agrees-with-model\", \"fencing\"]\n"));
        assert!(e.contains("twice"), "{e}");
        let e = err(&format!(
            "{SH}[[scenario]]\nid = \"redis-lua\"\nrounds = 3\n"
        ));
        assert!(
            e.starts_with("4: scenario.rounds:") && e.contains("nemesis"),
            "{e}"
        );
        let e = err(&format!(
            "{SH}[[scenario]]\nid = \"redis-lua\"\nnemesis = \"random:lag\"\n"
        ));
        assert!(
            e.starts_with("4: scenario.nemesis:") && e.contains("\"lag\""),
            "{e}"
        );
        let e = err(&format!(
            "{SH}[[scenario]]\nid = \"redis-lua\"\nnemesis = \"random\"\nrounds = 0\n"
        ));
        assert!(e.starts_with("5: scenario.rounds:"), "{e}");
        let e = err(&format!(
            "{SH}[[scenario]]\nid = \"redis-lua\"\nshrink_runs = 2\n"
        ));
        assert!(e.starts_with("4: scenario.shrink_runs:"), "{e}");
        let e = err("client = [\"/bin/sh\"\n");
        assert!(e.starts_with("1:") || e.starts_with("2:"), "{e}");
    }
}
