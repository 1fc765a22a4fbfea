//! `zkr inspect PATH`

use crate::args::{Global, InspectArgs};
use crate::connect;
use crate::exit::{Failure, Outcome, OK};
use crate::inspect;
use crate::output::{write_failure, Printer};

pub async fn run(global: &Global, args: InspectArgs) -> Outcome {
    super::check_path(&args.path)?;
    connect::check(global)?;
    let client = connect::connect(global).await?;
    let report = zkrecipes::participants::participants(&client, &args.path).await;
    connect::close(&client).await;
    let report = report.map_err(|e| Failure::from_core(&format!("inspect {}", args.path), e))?;
    let mut out = Printer::new();
    if global.json {
        out.json(&inspect::to_json(&report))
    } else {
        inspect::print_text(&mut out, &report)
    }
    .map_err(write_failure)?;
    Ok(OK)
}
