//! The QEMU glue: registration, one inline scoreboard add per decoded maintenance instruction,
//! and the exit line. Not compiled in unit tests (the `qemu_plugin_*` symbols exist only in QEMU).

use std::io::Write;
use std::sync::{Arc, Mutex};

use cachescope_arch::cache::ops::MaintOp;
use qemu_plugin::install::{Args, Info};
use qemu_plugin::{
    qemu_plugin_register_atexit_cb, qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu, qemu_plugin_scoreboard_sum, register,
    HasCallbacks, PluginId, PluginOp, PluginU64, Register, TranslationBlock,
};

use crate::{counts_line, out_path};

/// The plugin's name in its messages.
const NAME: &str = "cachescope-insn-count";

/// The plugin: one scoreboard of `MaintOp::COUNT` counters per vCPU.
#[derive(Default)]
struct InsnCount {
    state: Option<Arc<State>>,
}

struct State {
    /// Counter of each operation (`MaintOp::index`) in the scoreboard.
    counters: [PluginU64; MaintOp::COUNT],
    out: Mutex<Box<dyn Write + Send>>,
}

// SAFETY: a `PluginU64` is a handle to a scoreboard that QEMU owns for the plugin's lifetime
// and updates only through inline operations and its own API; the handles are never written
// after registration, and the output is behind a mutex.
unsafe impl Send for State {}
// SAFETY: as for Send: shared references only read the handles.
unsafe impl Sync for State {}

impl State {
    /// The line written at exit.
    fn line(&self) -> String {
        counts_line(|op| qemu_plugin_scoreboard_sum(self.counters[op.index()]))
    }

    fn at_exit(&self) {
        let line = self.line();
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            eprintln!("{NAME}: error: cannot write the counts");
        }
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("{NAME}: error: {msg}");
    std::process::exit(2)
}

impl Register for InsnCount {
    fn register(&mut self, id: PluginId, args: &Args, _info: &Info) -> qemu_plugin::Result<()> {
        let out: Box<dyn Write + Send> = match out_path(&args.raw).unwrap_or_else(|e| fail(&e)) {
            Some(path) => Box::new(std::fs::File::create(&path).unwrap_or_else(|e| fail(&format!("cannot create '{path}': {e}")))),
            None => Box::new(std::io::stderr()),
        };
        // SAFETY: a scoreboard of COUNT u64 per vCPU, owned by QEMU for the plugin's lifetime.
        let score = unsafe { qemu_plugin::sys::qemu_plugin_scoreboard_new(8 * MaintOp::COUNT) };
        let counters = std::array::from_fn(|i| PluginU64 { score, offset: 8 * i });
        let state = Arc::new(State { counters, out: Mutex::new(out) });
        let s = state.clone();
        qemu_plugin_register_atexit_cb(id, move |_| s.at_exit())?;
        self.state = Some(state);
        Ok(())
    }
}

impl HasCallbacks for InsnCount {
    fn on_translation_block_translate(&mut self, _id: PluginId, tb: TranslationBlock) -> qemu_plugin::Result<()> {
        let Some(state) = &self.state else { return Ok(()) };
        for insn in tb.instructions() {
            let mut word = [0u8; 4];
            if insn.read_data(&mut word) != 4 {
                continue;
            }
            if let Some(op) = MaintOp::decode(u32::from_le_bytes(word)) {
                qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
                    insn,
                    PluginOp::QEMU_PLUGIN_INLINE_ADD_U64,
                    state.counters[op.index()],
                    1,
                );
            }
        }
        Ok(())
    }
}

register!(InsnCount::default());
