//! LAVA job definitions generated from the board table, and the local `qemu` device that
//! `scripts/lava-local` runs them on.
//!
//! - A board with LAVA device type `qemu` gets a QEMU job: `deploy: to: tmpfs` of the kernel
//!   ELF, `boot: method: qemu`, and the runner's options (semihosting, no NIC, no display) plus
//!   the kernel arguments (`-append`) in the image's `image_arg`, so that a lab's stock `qemu`
//!   device type and the local device dictionary boot it the same way.
//! - Every other board gets a lab job: `deploy: to: flasher` of the SD-card image that
//!   scripts/mksdcard writes, `boot: method: minimal` (power on, read the serial console). The
//!   Pi firmware then boots the card exactly as on a desk: no U-Boot in between (see docs/lava.md).
//! - Both end in the same `test: monitors:` block: the KTAP output is watched between the first
//!   `KTAP version 1` and the `end` record, and every leaf result line (not a suite's own
//!   result line) becomes a LAVA test case.

use serde_json::{json, Map, Value};

use crate::boards::{ArgsFrom, Board, QemuKernel};
use cachescope_report::ktap::cases;

/// The monitor's (= LAVA test suite's) name.
pub const SUITE: &str = "cachescope";

/// Start of the monitored output: the first KTAP line (a regular expression for pexpect).
pub const MONITOR_START: &str = cases::START;

/// End of the monitored output: the kernel's `end` record (a regular expression; the brace is
/// escaped).
pub const MONITOR_END: &str = r#"# cs: \{"record":"end""#;

/// One leaf KTAP result line at any depth → `test_case_id` and `result`; a suite's own result
/// line is not matched, so each case is one LAVA test case (a failed case is not counted again
/// as its failed suite).
///
/// A suite's result line is the one whose previous line is deeper (the suite's last line, its
/// `# NAME: pass:… total:…` totals); a leaf's previous line is at its own depth or shallower
/// (a diagnostic, the plan, the previous result). A regular expression on a stream cannot
/// compare depths, so the pattern matches the previous line and the result line together:
/// - `(?m)^(?P<indent>[ ]*)[^ \r\n][^\r\n]*\r*\n` is the previous line with its indentation
///   (it must not be blank); it is consumed, the result line is not (it is only looked at, so
///   it stays in pexpect's buffer as the previous line of the next result);
/// - the first lookahead needs the whole result line up to its newline, indented at least as
///   far as the previous line (`(?P=indent)[ ]*`), and captures the name (up to a ` # `
///   directive): nothing matches before the line is complete, so a partial read never cuts a
///   name short;
/// - the second lookahead captures `result`: the `SKIP` of `ok N name # SKIP`, else the
///   line's own `not ok` / `ok`.
///
/// A result line is therefore matched only as the line after a matched previous line: once
/// as a result, once more as the previous line of the next match, never twice as a result.
/// Read by Python's `re` through pexpect (which compiles with DOTALL only, hence `(?m)`).
pub const MONITOR_PATTERN: &str = concat!(
    r"(?m)^(?P<indent>[ ]*)[^ \r\n][^\r\n]*\r*\n",
    r"(?=(?P=indent)[ ]*(?:not )?ok [0-9]+ (?:- )?(?P<test_case_id>[^#\r\n]*[^#\s])(?: +#[^\r\n]*)?\r*\n)",
    r"(?=(?P=indent)[ ]*(?:(?:not )?ok [0-9]+ [^#\r\n]* # (?=SKIP))?(?P<result>SKIP|not ok|ok))",
);

/// `result` group → LAVA result.
pub const FIXUPDICT: [(&str, &str); 3] = [("ok", "pass"), ("not ok", "fail"), ("SKIP", "skip")];

/// QEMU options of every QEMU job (as scripts/qemu-run): semihosting for the command line and
/// the exit status, no NIC (QEMU's virtio ROM is absent from Debian's package), no display.
pub const QEMU_RUN_OPTIONS: &str = "-semihosting-config enable=on,target=native -nic none -display none";

/// What a generated job is built from besides the board.
#[derive(Clone, Debug)]
pub struct JobOptions {
    /// Kernel arguments (`only=boot,selftest …`).
    pub args: String,
    /// URL under which `BOARD/FILE` artefacts are served (`file:///…` for a local run).
    pub base_url: String,
}

/// Name of the artefact a job deploys for `board`: the ELF or raw image for QEMU, the SD-card
/// image for a lab board.
pub fn artefact(board: &Board) -> Result<String, String> {
    if board.lava_device_type == "qemu" {
        let qemu =
            board.qemu.as_ref().ok_or_else(|| format!("board '{}': LAVA device type qemu but qemu_machine = \"none\"", board.name))?;
        Ok(match (qemu.kernel, &board.image) {
            (QemuKernel::Image, Some(image)) => image.clone(),
            _ => "cachescope.elf".to_string(),
        })
    } else {
        board.sdcard.clone().ok_or_else(|| format!("board '{}': a lab job deploys the SD-card image, but sdcard = \"none\"", board.name))
    }
}

/// The kernel arguments must survive `-append '…'` (QEMU), cmdline.txt, and pexpect's
/// command-line split in lava-run.
pub fn check_args(args: &str) -> Result<(), String> {
    if let Some(c) = args.chars().find(|c| matches!(c, '\'' | '"' | '\\' | '{' | '}') || c.is_control()) {
        return Err(format!("kernel arguments must not contain {c:?} (they are quoted into a QEMU command line and cmdline.txt)"));
    }
    Ok(())
}

/// The `test:` action shared by every job.
pub fn monitor_test(minutes: u64) -> Value {
    let fixup: Map<String, Value> = FIXUPDICT.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    json!({"test": {
        "timeout": {"minutes": minutes},
        "monitors": [{
            "name": SUITE,
            "start": MONITOR_START,
            "end": MONITOR_END,
            "pattern": MONITOR_PATTERN,
            "fixupdict": fixup,
        }],
    }})
}

/// One job definition for `board`.
pub fn job(board: &Board, opts: &JobOptions) -> Result<Value, String> {
    check_args(&opts.args)?;
    let url = format!("{}/{}/{}", opts.base_url.trim_end_matches('/'), board.name, artefact(board)?);
    let shown = if opts.args.is_empty() { "default arguments".to_string() } else { opts.args.clone() };
    let mut name = format!("cachescope {}: {shown}", board.name);
    if name.len() > 200 {
        let mut cut = 197;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
        name.push_str("...");
    }
    let metadata = json!({
        "cachescope.board": board.name,
        "cachescope.kernel_args": opts.args,
        "cachescope.artefact": url,
        "cachescope.generated_by": "cachescope-xtask lava-jobs (boards.toml)",
    });
    if board.lava_device_type == "qemu" {
        qemu_job(board, opts, name, url, metadata)
    } else {
        lab_job(board, opts, name, url, metadata)
    }
}

fn qemu_job(board: &Board, opts: &JobOptions, name: String, url: String, metadata: Value) -> Result<Value, String> {
    let qemu = board.qemu.as_ref().ok_or_else(|| format!("board '{}': no QEMU machine", board.name))?;
    if board.kernel_args_from != ArgsFrom::Semihosting && qemu.kernel_args.is_empty() {
        return Err(format!("board '{}': under QEMU its arguments come from {:?}", board.name, board.kernel_args_from));
    }
    let args = [qemu.kernel_args.as_str(), opts.args.as_str()].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(" ");
    let image_arg = format!("-kernel {{kernel}} -append '{args}' {QEMU_RUN_OPTIONS}");
    let mut context = Map::new();
    context.insert("arch".into(), json!("arm64"));
    context.insert("machine".into(), json!(qemu.machine));
    if let Some(cpu) = &qemu.cpu {
        context.insert("cpu".into(), json!(cpu));
    }
    if let Some(memory) = &qemu.memory {
        context.insert("memory".into(), json!(memory));
    }
    Ok(json!({
        "device_type": "qemu",
        "job_name": name,
        "timeouts": {"job": {"minutes": 15}, "action": {"minutes": 10}, "connection": {"minutes": 2}},
        "priority": "medium",
        "visibility": "public",
        "context": context,
        "metadata": metadata,
        "actions": [
            {"deploy": {
                "to": "tmpfs",
                "timeout": {"minutes": 2},
                "images": {"kernel": {"url": url, "image_arg": image_arg}},
            }},
            {"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"minutes": 2}}},
            monitor_test(10),
        ],
    }))
}

fn lab_job(board: &Board, _opts: &JobOptions, name: String, url: String, metadata: Value) -> Result<Value, String> {
    Ok(json!({
        "device_type": board.lava_device_type,
        "job_name": name,
        "timeouts": {"job": {"minutes": 30}, "action": {"minutes": 20}, "connection": {"minutes": 2}},
        "priority": "medium",
        "visibility": "public",
        "metadata": metadata,
        "actions": [
            {"deploy": {
                "to": "flasher",
                "timeout": {"minutes": 10},
                "images": {"image": {"url": url}},
            }},
            {"boot": {"method": "minimal", "timeout": {"minutes": 2}}},
            monitor_test(20),
        ],
    }))
}

/// The local device dictionary for the `qemu` device type, as lava-server's qemu.jinja2 would
/// render it for `board`, except `-nic none` in place of its `-net nic,… -net user`.
pub fn local_device(board: &Board) -> Result<Value, String> {
    let qemu = board.qemu.as_ref().ok_or_else(|| format!("board '{}': no QEMU machine to run locally", board.name))?;
    let mut options = vec![format!("-machine {}", qemu.machine)];
    if let Some(cpu) = &qemu.cpu {
        options.push(format!("-cpu {cpu}"));
    }
    if let Some(memory) = &qemu.memory {
        options.push(format!("-m {memory}"));
    }
    options.extend(["-nographic", "-nic none", "-monitor none"].map(String::from));
    Ok(json!({
        "constants": {
            "shutdown-message": "The system is going down for reboot NOW",
            "kernel-start-message": "Linux version [0-9]",
            "default-shell-prompt": "lava-test: # ",
            "spawn_maxread": "4092",
            "failure_retry": 1,
            "boot_retry": 1,
            "posix": {"lava_test_sh_cmd": "/bin/sh", "lava_test_results_dir": "/lava-%s", "lava_test_shell_file": "~/.bashrc"},
        },
        "parameters": {},
        "available_architectures": ["arm64"],
        "actions": {
            // `to: tmpfs` is accepted where the `image` method exists (qemu.jinja2's guest disk parameters).
            "deploy": {
                "connections": {"serial": null},
                "methods": {"image": {"parameters": {"guest": {"size": 512, "interface": "ide", "driveid": "lavatest"}}}},
            },
            "boot": {"connections": {"serial": null}, "methods": {"qemu": {"parameters": {"command": "qemu-system-aarch64", "options": options}}}},
        },
        "timeouts": {"actions": {}, "connections": {}},
    }))
}

/// The dispatcher configuration of a local run: no network, so the dispatcher's own address
/// is the loopback.
pub fn local_dispatcher() -> Value {
    json!({"dispatcher_ip": "127.0.0.1"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boards;
    use fancy_regex::Regex;

    fn repo_boards() -> Vec<Board> {
        boards::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../boards.toml")).unwrap()
    }

    /// What pexpect does with the pattern: search the buffer, consume up to the match end,
    /// search again. Returns (test_case_id, result after the fixupdict) in order.
    fn monitor(stream: &str) -> Vec<(String, String)> {
        let re = Regex::new(MONITOR_PATTERN).unwrap();
        let end = Regex::new(MONITOR_END).unwrap();
        let start = stream.find(MONITOR_START).expect("start string");
        let mut buf = &stream[start + MONITOR_START.len()..];
        let mut out = Vec::new();
        loop {
            let result = re.captures(buf).unwrap();
            let stop = end.find(buf).unwrap();
            match (result, stop) {
                (Some(c), stop) if stop.as_ref().is_none_or(|s| c.get(0).unwrap().start() < s.start()) => {
                    let r = &c["result"];
                    let fixed = FIXUPDICT.iter().find(|(k, _)| *k == r).map(|(_, v)| *v).unwrap();
                    out.push((c["test_case_id"].to_string(), fixed.to_string()));
                    buf = &buf[c.get(0).unwrap().end()..];
                }
                _ => return out,
            }
        }
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn pattern_matches_ktap_lines_in_both_header_orders() {
        let linux_order = "junk ok 7 not-a-line\r\nKTAP version 1\r\n1..2\r\n  KTAP version 1\r\n  # Subtest: boot\r\n  1..2\r\n  ok 1 runs-at-el1\r\n  ok 2 entry-above-el1 # SKIP entered at EL1: the EL2/EL3 drop path was not exercised\r\n  # boot: pass:1 fail:0 skip:1 total:2\r\nok 1 boot\r\n  # Subtest: selftest\r\n  KTAP version 1\r\n  1..2\r\n  # FAIL: unexpected exception: ok 3 fake # SKIP fake\r\n  not ok 1 unexpected-data-abort\r\n    ok 1 - deeper # SKIP why: ok 4 x\r\n  ok 2 runs-after-abort\r\nnot ok 2 selftest\r\n# cs: {\"record\":\"end\",\"passed\":2,\"failed\":1,\"skipped\":1}\r\nok 3 after-end\r\n";
        assert_eq!(
            monitor(linux_order),
            pairs(&[("runs-at-el1", "pass"), ("entry-above-el1", "skip"), ("unexpected-data-abort", "fail"), ("deeper", "skip"),]),
            "leaf cases only: the suites' own lines (boot, selftest, and runs-after-abort, which closes \
             the deeper level) are not test cases, and nothing after the end record counts"
        );
        // Plain \n line ends too.
        assert_eq!(monitor(&linux_order.replace("\r\n", "\n")).len(), 4);
    }

    #[test]
    fn pattern_waits_for_the_whole_line() {
        let re = Regex::new(MONITOR_PATTERN).unwrap();
        assert!(re.captures("  1..2\n  ok 2 entry-above-el1 # SK").unwrap().is_none());
        assert!(re.captures("  1..2\n  ok 2 entry-above-el1").unwrap().is_none());
        let c = re.captures("  1..2\n  ok 2 entry-above-el1\n").unwrap().unwrap();
        assert_eq!((&c["test_case_id"], &c["result"]), ("entry-above-el1", "ok"));
        assert_eq!(c.get(0).unwrap().as_str(), "  1..2\n", "only the previous line is consumed");
        let c = re.captures("# x\nnot ok 3 x-y # SKIP no\r\n").unwrap().unwrap();
        assert_eq!((&c["test_case_id"], &c["result"]), ("x-y", "SKIP"));
        let c = re.captures("  # FAIL: x\r\n  not ok 3 x-y # TODO later\r\n").unwrap().unwrap();
        assert_eq!((&c["test_case_id"], &c["result"]), ("x-y", "not ok"));
    }

    #[test]
    fn a_failed_case_is_one_lava_failure_not_two() {
        // The suite's result line follows its totals line (deeper): never a test case.
        let stream = "KTAP version 1\n1..1\n  KTAP version 1\n  # Subtest: cache\n  1..2\n  # FAIL: lines differ\n  not ok 1 zero-buffer\n  ok 2 zva\n  # cache: pass:1 fail:1 skip:0 total:2\nnot ok 1 cache\n# cs: {\"record\":\"end\"}\n";
        assert_eq!(monitor(stream), pairs(&[("zero-buffer", "fail"), ("zva", "pass")]));
        let re = Regex::new(MONITOR_PATTERN).unwrap();
        assert!(re.captures("  # cache: pass:1 fail:1 skip:0 total:2\nnot ok 1 cache\n").unwrap().is_none());
        assert!(re.captures("\nnot ok 1 cache\n").unwrap().is_none(), "a blank previous line (a consumed one) is no previous line");
    }

    #[test]
    fn pattern_agrees_with_the_ktap_parser_on_the_real_log() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/qemu-real.log");
        let text = std::fs::read_to_string(path).unwrap();
        let expected: Vec<(String, String)> =
            cases::parse(text.lines()).cases.iter().filter(|c| c.leaf).map(|c| (c.name.clone(), c.outcome.lava().to_string())).collect();
        assert_eq!(expected.len(), 31, "the 31 leaf cases; the 4 suites' own lines are not test cases");
        assert_eq!(monitor(&text), expected);
        assert_eq!(monitor(&text.replace('\n', "\r\n")), expected);
    }

    #[test]
    fn fixupdict_covers_every_result_word() {
        let words: Vec<&str> = FIXUPDICT.iter().map(|(k, _)| *k).collect();
        assert_eq!(words, ["ok", "not ok", "SKIP"]);
        for (_, v) in FIXUPDICT {
            assert!(["pass", "fail", "skip"].contains(&v));
        }
    }

    #[test]
    fn jobs_for_every_board() {
        let opts = JobOptions { args: "only=boot,selftest".into(), base_url: "https://example.com/cs/".into() };
        for b in repo_boards() {
            let j = job(&b, &opts).unwrap();
            assert_eq!(j["device_type"], json!(b.lava_device_type));
            let deploy = &j["actions"][0]["deploy"];
            if b.image.is_none() {
                // The ELF itself is booted (under QEMU).
                let kernel = &deploy["images"]["kernel"];
                assert_eq!(kernel["url"], json!(format!("https://example.com/cs/{}/cachescope.elf", b.name)));
                let arg = kernel["image_arg"].as_str().unwrap();
                assert!(
                    arg.starts_with("-kernel {kernel} -append 'only=boot,selftest' -semihosting-config enable=on,target=native -nic none"),
                    "{arg}"
                );
            } else {
                assert_eq!(deploy["to"], json!("flasher"));
                assert_eq!(deploy["images"]["image"]["url"], json!(format!("https://example.com/cs/{0}/cachescope-{0}.img", b.name)));
                assert_eq!(j["actions"][1]["boot"]["method"], json!("minimal"));
            }
            assert_eq!(j["actions"][2]["test"]["monitors"][0]["pattern"], json!(MONITOR_PATTERN));
        }
    }

    #[test]
    fn bad_arguments_are_refused() {
        let b = &repo_boards()[0];
        let opts = JobOptions { args: "only='x'".into(), base_url: "file:///x".into() };
        assert!(job(b, &opts).unwrap_err().contains("must not contain '\\''"));
    }
}
