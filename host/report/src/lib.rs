//! cachescope-report: the host-side tool for cachescope UART logs.
//!
//! A log is what the kernel prints on its PL011: KTAP version 1 results plus `# cs: {json}`
//! records (docs/records.md; schemas 1 and 2), possibly after emulator noise and with CRLF line
//! endings. The tool validates it strictly ([`ktap`], [`records`]), extracts the records
//! ([`extract`]), renders a Markdown/HTML report with SVG plots ([`report`], [`svg`]), compares
//! metrics against a baseline ([`compare`], with the run parameters of [`runinfo`]), writes JUnit
//! XML for CI systems ([`junit`]), captures logs from a serial device ([`capture`]), filters a live
//! console ([`console`]), digests a run ([`summary`]) and analyses the cache model's records
//! ([`model_data`]). The
//! command line is in `main.rs` (clap); `cachescope-report --help` prints it.

#![deny(missing_docs)]

pub mod bench;
pub mod capture;
pub mod compare;
pub mod compare_model;
pub mod console;
pub mod contract;
pub mod core_to_core;
mod digest_format;
pub mod dl;
pub mod expect;
pub mod extract;
pub mod firmware;
pub mod input;
pub mod junit;
pub mod ktap;
pub mod metrics;
pub mod model_data;
pub mod records;
pub mod report;
pub mod runinfo;
pub mod runs;
pub mod source;
pub mod summary;
pub mod svg;
pub mod symbols;
pub mod times;
pub mod verdict;
pub mod xml;
