//! `sluice lookups ...`: Druid's lookups as commands on the configured backends (the lookup
//! API's `/druid/coordinator/v1/lookups/config` routes, on the same stores).

use crate::backends::BackendArgs;
use crate::input::read_json;
use anyhow::{bail, Result};
use clap::Subcommand;
use serde_json::{Map, Value};
use sluice_metastore::lookups::{self, LookupSpec, DEFAULT_TIER};
use std::path::PathBuf;

/// Lookup operations.
#[derive(Subcommand)]
pub enum LookupsCommand {
    /// Creates or replaces a lookup: Druid's `{"version", "lookupExtractorFactory": {"type":
    /// "map", "map": {...}}}`, a file or - for standard input; the version must be greater than
    /// the one it replaces.
    Put {
        /// The lookup's name.
        name: String,
        /// Its spec (JSON).
        spec: PathBuf,
        /// Its tier.
        #[arg(long, default_value = DEFAULT_TIER)]
        tier: String,
    },
    /// Prints one lookup as the API answers it, or every lookup as `{tier: {name: spec}}`.
    Show {
        /// The lookup (all when absent).
        name: Option<String>,
        /// Its tier.
        #[arg(long, default_value = DEFAULT_TIER)]
        tier: String,
    },
    /// Deletes a lookup.
    Delete {
        /// The lookup's name.
        name: String,
        /// Its tier.
        #[arg(long, default_value = DEFAULT_TIER)]
        tier: String,
    },
}

/// Runs a lookups command.
pub async fn run(command: LookupsCommand, backends: &BackendArgs) -> Result<()> {
    let b = backends.open().await?;
    let (meta, store) = (b.meta.as_ref(), b.store.as_ref());
    match command {
        LookupsCommand::Put { name, spec, tier } => {
            let spec = LookupSpec::parse(&tier, &name, &read_json(&spec)?)?;
            lookups::put(meta, store, &tier, &name, &spec).await?;
            println!("{tier}/{name}: version {} stored, {} entries", spec.version, spec.map.len());
        }
        LookupsCommand::Show { name: Some(name), tier } => match lookups::read(meta, store, &tier, &name).await? {
            Some(spec) => println!("{}", serde_json::to_string_pretty(&spec.to_json())?),
            None => bail!("lookup {tier}/{name} not found"),
        },
        LookupsCommand::Show { name: None, .. } => {
            let mut all: Map<String, Value> = Map::new();
            for item in lookups::list(meta).await? {
                if let Some(spec) = lookups::read(meta, store, &item.tier, &item.name).await? {
                    let tier = all.entry(item.tier.clone()).or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(names) = tier {
                        names.insert(item.name, spec.to_json());
                    }
                }
            }
            println!("{}", serde_json::to_string_pretty(&Value::Object(all))?);
        }
        LookupsCommand::Delete { name, tier } => {
            if !lookups::remove(meta, &tier, &name).await? {
                bail!("lookup {tier}/{name} not found");
            }
            println!("{tier}/{name}: deleted");
        }
    }
    Ok(())
}
