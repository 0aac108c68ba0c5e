//! The plugin around the model: translation-time planning ([`tb_plan`]), per-access memory
//! callbacks, per-TB instruction-fetch callbacks, marker and maintenance callbacks with register
//! access, and the records at phase ends and at exit.
//!
//! - [`tb_plan`]: what to register for one translation block (fetch segments, batching groups,
//!   special instructions), from its words alone.
//! - [`shortcut`]: the fast path's per-vCPU state and decisions.
//! - [`engine`] and `access`: the decisions (model, shortcut, guest state), over two seams the
//!   glue implements ([`engine::Host`], [`engine::MemAccess`]).
//! - `markers`: what each marker does.
//! - [`emit`]: the state behind the lock and the records the plugin writes.
//! - `glue` (not in test builds): the QEMU side, thin: it reads what QEMU knows and calls the
//!   engine.
//!
//! Only the glue names a QEMU type, so everything that decides runs in `cargo test`, among it
//! the shortcut against the model alone (`tests`).
//!
//! # Speed (the shortcut; `fast=off` disables all of it)
//! - **Most recent lines**: an access to a line the vCPU's model call left as the most recent
//!   of its L1D set, when no model call changed that set since (each cache reports the sets it
//!   changed: `cache::SetChanges`), is an L1D hit that changes no replacement state (not after a
//!   non-temporal access, whose line may sit at the end of the order), so it is only counted,
//!   without the lock or the model (a write-back write defers its dirty bit to the next model
//!   call). Up to 128 lines per vCPU; one only when a TLB model or a write-streaming detector
//!   must see every access in order, or once a Non-shareable mapping was seen (rule 16b). A
//!   store to a line of the vCPU's last TB, or to one another core just fetched, goes to the
//!   model (the sanitizer's stale-instruction rule). On Linux's boot 87 % of data accesses end
//!   here (27 % when only the previous access's line was remembered).
//! - **Batching**: a run of consecutive immediate-offset loads/stores on one base register gets a
//!   single memory callback per direction (the first one's; the direction is fixed at translation,
//!   so no query to QEMU), which also simulates the others at their decoded
//!   offsets; when they all fall in the first one's line they are counted in one step.
//! - **Fetch memos**: each fetch callback (a TB's start or a later segment, one L1I line) keeps
//!   a [`shortcut::FetchMemo`] of its last fetch through the model: the vCPU, the line, its PA
//!   and VA page. While the line is the one last made most recent in its L1I set, no write
//!   reached its 64-byte block and no TLBI its page ([`shortcut::MemoStamps`]), and nothing else
//!   that changes fetches happened (the vCPU's fetch epoch), the fetch is an L1I hit that
//!   changes nothing and reports nothing: only counted. If the line moved down its set, the
//!   model is asked for the hit alone (`Model::l1i_plain_hit`). Likewise a remembered data line
//!   whose set changed is promoted by the model alone (`Model::l1d_plain_hit`).
//! - **Precise invalidation**: DC by VA, DC ZVA, IC IVAU and a TLBI by VA whose span the guest's
//!   tables tell keep the shortcut and drop only what they change (the sets the caches report,
//!   the written blocks, the TLBI'd pages); anything else drops it all.
//! - **Inline fetch**: a TB executed right after itself hits the same L1I lines; an inline
//!   scoreboard counter and a conditional callback make such repeats cost no callback at all
//!   (one vCPU). With several run round-robin the engine counts each core's repeats itself in
//!   the TB's first callback ([`engine::TbBoard`]), with no model call.
//! - **Page cache**: the VA→PA page and attribute of the last 16 pages of data accesses
//!   (direct-mapped by the VA page's low bits) are reused without asking QEMU, checking the
//!   walk, learning the page again or scanning the windows; only for the callback's own page.
//!
//! Anything that could change these facts (maintenance, markers, TLBI, SCTLR writes, a geometry
//! change) drops the shortcut first. The counts are identical with and without it: the unit
//! tests in `tests` drive the engine with and without it on random traces (every record equal),
//! and scripts/model-check compares whole runs under QEMU.
//!
//! # Which core runs (more than one vCPU)
//! QEMU 10.0 passes a callback the vCPU index as a constant baked into the translated code
//! whenever the translation is not `CF_PARALLEL` (`gen_cpu_index()` in accel/tcg/plugin-gen.c),
//! i.e. always under `-icount`'s round-robin TCG: a TB that several cores share reports the
//! vCPU that translated it. With more than one vCPU the plugin therefore asks the guest instead:
//! each TB's fetch callback (the first callback of every TB) reads `TPIDR_EL1` (unless QEMU's
//! `current_cpu` shows the same vCPU as at the last read: [`engine::Engine::identify_tb`]), which firmware
//! speaking marker protocol 5 sets to [`cachescope_arch::marker::core_id_value`] on every core,
//! and every callback of the TB uses that core (a per-host-thread value: right under
//! round-robin, where one thread runs every vCPU between TBs, and under MTTCG alike). Firmware
//! that leaves the register untagged is identified by VMPIDR_EL2 where QEMU exposes it (EL2 or
//! EL3 present; see `Engine::identify_by`), else gets the callback's index; under round-robin
//! (QEMU's command line has `-icount` or `thread=single`) that index cannot be trusted, so
//! hazards raised in such TBs, and those on what such TBs touched ([`attribution`]), are
//! counted, not reported, and `model-warning`s say so. Under MTTCG the index is right: there
//! every TB whose register names a core is checked against it, and a disagreement is named in a
//! `model-warning` at exit (docs/cache-model.md "Foreign firmware" has the measurements).
//!
//! # One lock (the trade-off under MTTCG)
//! Every model call takes one global lock ([`lock::SpinLock`]) around the whole state ([`emit::Core`]:
//! the model, the guest state, the phases, the sanitizer, the output). The model is one object
//! because the caches are not independent: a shared L2/L3, the coherence rules (rule 17: a write
//! invalidates the other cores' copies, a read of a line another core holds dirty transfers it)
//! and the phases (every core's counts at a marker) all read or change several cores' state in
//! one step, so one lock makes each access atomic against all others and the counts a function
//! of the order in which accesses take the lock.
//! - **One vCPU, or several under `-icount`** (round-robin TCG: one host thread runs every
//!   vCPU): the lock is never contended; it costs one compare-and-swap and one store per model
//!   call, and the shortcut (one vCPU) skips it for most accesses.
//! - **Several vCPUs under MTTCG** (one host thread per vCPU, no `-icount`): the vCPUs'
//!   model calls are serialised, so the plugin runs at most as fast as one host core whatever
//!   the number of vCPUs, and the order in which two cores' accesses meet in the model is the
//!   order they take the lock, which varies from run to run (as the guest's own interleaving
//!   does). Counts are exact per that order but not reproducible; reproducible multi-core
//!   counts need `-icount` (as the catalogue's model rows use).
//! - **A lock per core** would let private L1 hits proceed in parallel, but any access that
//!   misses the L1, and every coherence action, needs the shared levels and the other cores'
//!   L1s; it would need a second lock for those, taken in a fixed order, and the phase and
//!   sanitizer state a third, for a gain only under MTTCG, where the counts are not reproducible
//!   anyway. docs/cache-model.md gives the measurement on the four-core maintenance check.

pub mod attribution;
pub mod emit;
pub mod engine;
pub mod lock;
pub mod shortcut;
pub mod tb_plan;

mod access;
mod markers;
pub mod ram;

#[cfg(not(test))]
mod glue;

#[cfg(test)]
mod tests;

/// The plugin's name in messages.
const NAME: &str = "cachescope-cache-model";
