//! The board table, `boards.toml` at the repository root: read by `cachescope-boards`, the one
//! reader, which the kernel's build.rs uses too. Re-exported here as xtask's `boards` module.

pub use cachescope_boards::*;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn repo_file(rel: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn repo_boards() -> Vec<Board> {
        parse(&repo_file("boards.toml")).expect("boards.toml parses")
    }

    /// build.rs and the scripts read board facts from boards.toml instead of restating them: no
    /// code line (comments aside) names a board's image, DTB, SD card, firmware file or machine.
    #[test]
    fn build_and_scripts_read_boards_toml() {
        let files = ["build.rs", "scripts/mkimage", "scripts/mksdcard", "scripts/check-images", "scripts/qemu-run", "scripts/board-of"];
        let build = repo_file("build.rs");
        assert!(build.contains("boards.toml") && build.contains("link_base"), "build.rs reads link_base from boards.toml");
        for b in repo_boards() {
            let mut facts: Vec<String> = [&b.image, &b.dtb, &b.sdcard].into_iter().flatten().cloned().collect();
            facts.extend(b.firmware.iter().cloned());
            facts.extend(b.qemu.iter().map(|q| q.machine.clone()).filter(|m| m != "virt"));
            for file in files {
                for (n, line) in repo_file(file).lines().enumerate() {
                    let code = line.split(" #").next().unwrap_or("").trim_start();
                    if code.starts_with('#') || code.starts_with("//") {
                        continue;
                    }
                    for fact in &facts {
                        assert!(
                            !code.contains(fact.as_str()),
                            "{file}:{}: names '{fact}' of board {} (read it from boards.toml)",
                            n + 1,
                            b.name
                        );
                    }
                }
            }
        }
    }
}
