use anyhow::Context;
use ontap_operator::cli::{self, Command};

// jemalloc rather than glibc's malloc: the caches' long-lived objects are made between the
// reconciles' short-lived ones, and glibc keeps the holes those leave resident
// (docs/benchmarks/kyma.md compares both). Without the default `jemalloc` feature glibc's stays,
// for heaptrack to see the allocations and for the tests' debug build (Cargo.toml says why).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // reqwest is built without a provider of its own, so ring (kube's) is rustls' only one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let parsed = cli::parse();
    match parsed.command {
        Command::Run(args) => {
            let flags = parsed.run_flags.unwrap_or_default();
            ontap_operator::runtime::run(*args, flags).await
        }
        Command::Crds(args) => match args.out_dir {
            None => {
                print!("{}", ontap_operator::manifests::crds_yaml()?);
                Ok(())
            }
            Some(dir) => {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                for (name, yaml) in ontap_operator::manifests::crd_files()? {
                    let path = dir.join(name);
                    std::fs::write(&path, yaml)
                        .with_context(|| format!("writing {}", path.display()))?;
                }
                Ok(())
            }
        },
        Command::Manifests(args) => Ok(ontap_operator::manifests::write(&args.root)?),
        Command::Admission(args) => ontap_operator::extension::admission::run(*args).await,
        Command::Version => {
            println!("ontap-operator {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
    }
}
