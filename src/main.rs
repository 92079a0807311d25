use clap::Parser;
use ontap_operator::cli::{Cli, Command};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Run(args) => ontap_operator::runtime::run(args).await,
        Command::Crds => {
            print!("{}", ontap_operator::api::crds_yaml()?);
            Ok(())
        }
        Command::Version => {
            println!("ontap-operator {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
    }
}
