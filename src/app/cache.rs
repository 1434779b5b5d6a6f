//! `wakeprobe cache list|prune`: the installed CLI versions, the channel each came from, and
//! their size.

use super::*;
use crate::backend::install::human_size;
use crate::backend::{self, install};
use crate::cli::{self, Exit};

/// `wakeprobe cache list|prune`
pub fn cache(command: cli::CacheCommand) -> AppResult {
    let root = install::cache_root();
    let versions = install::cached_versions(&root);
    match command {
        cli::CacheCommand::List => {
            let mut table = comfy_table::Table::new();
            table.load_style(comfy_table::presets::NOTHING);
            table.set_header(["version", "channel", "size", "path"]);
            let mut total = 0;
            for v in &versions {
                total += v.bytes;
                table.add_row([
                    v.version.clone(),
                    v.channel
                        .as_ref()
                        .map(|c| c.describe())
                        .unwrap_or_else(|| "none (no package: a broken install)".into()),
                    human_size(v.bytes),
                    v.path.display().to_string(),
                ]);
            }
            // The runtimes that install themselves keep their own folder (`<cache>/opencode`).
            let others = crate::runtime::opencode::install::cached(&root);
            for (version, path, bytes) in &others {
                total += bytes;
                table.add_row([
                    format!("opencode {version}"),
                    crate::runtime::opencode::install::PACKAGE.to_string(),
                    human_size(*bytes),
                    path.display().to_string(),
                ]);
            }
            println!("{table}");
            println!(
                "{} version(s), {} in {}",
                versions.len() + others.len(),
                human_size(total),
                root.display()
            );
        }
        cli::CacheCommand::Prune { keep } => {
            let removable: Vec<_> = versions
                .iter()
                .rev()
                .filter(|v| v.version != backend::PINNED_VERSION)
                .skip(keep)
                .collect();
            let mut freed = 0;
            for v in removable {
                std::fs::remove_dir_all(&v.path).map_err(|e| {
                    AppError::setup(format!("cannot remove {}: {e}", v.path.display()))
                })?;
                freed += v.bytes;
                println!("removed {} ({})", v.version, human_size(v.bytes));
            }
            // opencode's the same way, under its install lock (an install in progress first).
            let opencode = crate::runtime::opencode::install::versions_dir(&root);
            let others = crate::runtime::opencode::install::cached(&root);
            let pinned = crate::runtime::opencode::PINNED_VERSION;
            for (version, _, _) in others
                .iter()
                .rev()
                .filter(|(v, _, _)| v != pinned)
                .skip(keep)
            {
                let bytes = install::remove_in(&opencode, version)?;
                freed += bytes;
                println!("removed opencode {version} ({})", human_size(bytes));
            }
            println!("freed {}", human_size(freed));
        }
    }
    Ok(Exit::Ok)
}
