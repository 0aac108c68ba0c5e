//! The command line: bad input gives a clear message and exit status 2, never a panic.

use std::path::PathBuf;
use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cachescope-xtask")).args(args).output().expect("runs")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cachescope-xtask-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn unknown_board_exits_2() {
    let out = tmp("unknown");
    let o = xtask(&["lava-jobs", "--board", "rpi3", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let boards = cachescope_boards::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../boards.toml")).unwrap();
    let known: Vec<&str> = boards.iter().map(|b| b.name.as_str()).collect();
    assert!(stderr(&o).contains(&format!("unknown board 'rpi3' (boards.toml has: {})", known.join(", "))), "{}", stderr(&o));
}

#[test]
fn malformed_boards_toml_exits_2() {
    let dir = tmp("malformed");
    let file = dir.join("boards.toml");
    std::fs::write(&file, "[[board]]\nname = \"x\"\nlink_base = \"high\"\n").unwrap();
    let o = xtask(&["--boards", file.to_str().unwrap(), "lava-jobs", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("board 'x': "), "{}", stderr(&o));
    std::fs::write(&file, "[[board]\n").unwrap();
    let o = xtask(&["--boards", file.to_str().unwrap(), "board-value", "x", "image"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not valid TOML"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    assert_eq!(xtask(&["lava-jobs"]).status.code(), Some(2));
    assert_eq!(xtask(&["lava-jbos"]).status.code(), Some(2));
    assert_eq!(xtask(&["lava-jobs", "--help"]).status.code(), Some(0));
    let o = xtask(&["lava-check", "--log", "/nonexistent/lava.log"]);
    assert_eq!(o.status.code(), Some(2));
    // A catalogue run's --env must be KEY=VALUE: refused before anything runs.
    for bad in ["QEMU_CACHE_MODEL", "=on", "A B=1"] {
        let o = xtask(&["catalogue", "run", "--env", bad, "--kernel", "cachescope", "--elf", "/nonexistent/elf"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains(&format!("--env '{bad}': expected KEY=VALUE")), "{}", stderr(&o));
    }
}

#[test]
fn lava_jobs_without_a_base_url_are_refused() {
    // No default URL: a path of the generating machine would be one no lab can fetch.
    let out = tmp("no-base-url");
    for extra in [&[][..], &["--base-url", ""][..]] {
        let mut args = vec!["lava-jobs", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = xtask(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains("lava-jobs needs --base-url URL"), "{}", stderr(&o));
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "nothing written");
    }
}

#[test]
fn writes_one_job_per_board() {
    let out = tmp("jobs");
    let o = xtask(&["lava-jobs", "--args", "only=boot", "--base-url", "https://lab.example/cs", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for b in ["qemu-virt", "rpi4", "rpi5"] {
        let text = std::fs::read_to_string(out.join(format!("{b}.yaml"))).unwrap();
        assert!(text.contains("only=boot"), "{b}");
    }
    let text = std::fs::read_to_string(out.join("qemu-virt.yaml")).unwrap();
    assert!(text.contains("https://lab.example/cs/qemu-virt/cachescope.elf"), "{text}");
    let o = xtask(&["board-value", "rpi5", "image"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "kernel_2712.img\n");
}

#[test]
fn lava_check_fails_with_exit_1_on_disagreement() {
    let dir = tmp("check");
    let log = dir.join("lava.log");
    let line = |lvl: &str, msg: &str| format!("{{\"dt\": \"t\", \"lvl\": \"{lvl}\", \"msg\": {msg}}}\n");
    let mut text = String::new();
    for l in
        ["KTAP version 1", "1..1", "ok 1 only", "# cs: {\\\"record\\\":\\\"end\\\",\\\"passed\\\":1,\\\"failed\\\":0,\\\"skipped\\\":0}"]
    {
        text += &line("target", &format!("\"{l}\""));
    }
    text += &line("results", "{\"definition\": \"cachescope\", \"case\": \"only\", \"result\": \"fail\"}");
    text += &line("results", "{\"definition\": \"lava\", \"case\": \"job\", \"result\": \"pass\"}");
    std::fs::write(&log, &text).unwrap();
    let o = xtask(&["lava-check", "--log", log.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("case 1: KTAP 'only' pass (LAVA id only), LAVA 'only' fail"), "{}", stderr(&o));
    std::fs::write(&log, text.replace("\"result\": \"fail\"", "\"result\": \"pass\"")).unwrap();
    let o = xtask(&["lava-check", "--log", log.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
