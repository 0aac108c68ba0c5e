//! The record contract: every `# cs: {json}` record kind and its fields, declared once.
//!
//! The kernel's emitter builds records of these kinds (and nothing else), the cache-model
//! plugin likewise for its kinds, and the host report tool checks every record of a log against
//! these declarations; docs/records.md is generated from them ([`write_markdown`]) and a test
//! keeps it equal. A measurement carries its identity explicitly: a `metric` record names its
//! parameters in `params` and its phase in `phase`, both built by [`MetricId`].
//!
//! Wire format: one JSON object per line after [`PREFIX`], fields in declaration order,
//! `"record"` (the kind) first. Schema history: 1 — the first landing; 2 — `metric` gains
//! `params` (its identity) and `phase` (unique per measurement), `boot` gains `args`. Readers
//! accept both.
//!
//! ```
//! use cachescope_arch::record::{self, MetricId};
//! assert_eq!(record::kind("metric").unwrap().field("params").unwrap().ty, record::Ty::Params);
//! let id = MetricId { bench: "kv", variant: "scan-aligned", attr: "normal-wb", bytes: 131072, params: &[("tokens", 512)] };
//! assert_eq!(format!("{id}"), "kv/scan-aligned/normal-wb/131072/tokens=512");
//! ```

use core::fmt;

/// Schema version of the wire format (the `boot` record's `schema`).
pub const SCHEMA: u32 = 2;

/// Oldest schema a reader must accept.
pub const OLDEST_SCHEMA: u32 = 1;

/// What starts a record line (after any KTAP indentation).
pub const PREFIX: &str = "# cs: ";

/// A field's JSON type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A string.
    Str,
    /// A non-negative integer.
    UInt,
    /// A number (`null` where a figure cannot be computed, e.g. a rate over zero time).
    Num,
    /// A hexadecimal string `"0x…"` (addresses, raw register values).
    Hex,
    /// `true` / `false`.
    Bool,
    /// A non-negative integer or `null` (not reported).
    UIntOrNull,
    /// A string or `null` (not known).
    StrOrNull,
    /// An array of non-negative integers.
    UIntList,
    /// An object of parameter name → non-negative integer: a measurement's identity.
    Params,
}

impl Ty {
    /// How docs/records.md names the type.
    pub const fn name(self) -> &'static str {
        match self {
            Ty::Str => "string",
            Ty::UInt => "uint",
            Ty::Num => "number|null",
            Ty::Hex => "\"0x…\"",
            Ty::Bool => "bool",
            Ty::UIntOrNull => "uint|null",
            Ty::StrOrNull => "string|null",
            Ty::UIntList => "[uint]",
            Ty::Params => "{name: uint}",
        }
    }
}

/// One field of a record kind.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// JSON key.
    pub name: &'static str,
    /// JSON type.
    pub ty: Ty,
    /// Must be present (from the schema in `since`).
    pub required: bool,
    /// Schema version that introduced the field.
    pub since: u32,
    /// What it means (with its unit).
    pub doc: &'static str,
}

/// Who emits a record kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emitter {
    /// The kernel (on the console, in the KTAP document).
    Kernel,
    /// The cache-model plugin (its own output, `source: "model"`).
    Model,
    /// The runner, after QEMU exits (appended to the run's log after the kernel's `end`
    /// record, `source: "runner"`).
    Runner,
}

/// One record kind.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    /// The `"record"` value.
    pub name: &'static str,
    /// Who emits it.
    pub emitter: Emitter,
    /// When and why.
    pub doc: &'static str,
    /// Its fields after `"record"`, in wire order.
    pub fields: &'static [Field],
}

impl Kind {
    /// The declaration of field `name`.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

const fn req(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field { name, ty, required: true, since: 1, doc }
}

const fn opt(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field { name, ty, required: false, since: 1, doc }
}

const fn req_since(since: u32, name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field { name, ty, required: true, since, doc }
}

const fn kernel(name: &'static str, doc: &'static str, fields: &'static [Field]) -> Kind {
    Kind { name, emitter: Emitter::Kernel, doc, fields }
}

const fn model(name: &'static str, doc: &'static str, fields: &'static [Field]) -> Kind {
    Kind { name, emitter: Emitter::Model, doc, fields }
}

const fn runner(name: &'static str, doc: &'static str, fields: &'static [Field]) -> Kind {
    Kind { name, emitter: Emitter::Runner, doc, fields }
}

/// `boot`: the first record of every run.
pub const BOOT: Kind = kernel(
    "boot",
    "First record of a run: where and how the kernel runs.",
    &[
        req("schema", Ty::UInt, "wire-format version (this document: 2; readers accept 1)"),
        req("el", Ty::UInt, "exception level at entry (1, 2 or 3)"),
        req("current_el", Ty::UInt, "exception level the suites run at (always 1)"),
        req("board", Ty::Str, "board the kernel was built for: qemu-virt, rpi4, rpi5"),
        req("midr", Ty::Hex, "MIDR_EL1"),
        req("cpu", Ty::Str, "core name decoded from MIDR, or `unknown`"),
        req("cntfrq", Ty::UInt, "generic timer frequency, Hz (CNTFRQ_EL0)"),
        req("dtb", Ty::Bool, "a valid device tree was found"),
        req("ram_base", Ty::Hex, "RAM base (DTB, else the board default)"),
        req("ram_size", Ty::UInt, "RAM size, bytes"),
        req("uart", Ty::Hex, "console PL011 base address"),
        req("emulated", Ty::Bool, "running under QEMU: timings measure the emulator"),
        req_since(2, "args", Ty::Str, "the kernel arguments of the run, control characters escaped"),
        opt(
            "model",
            Ty::Str,
            "the cache model's profile when the runner loaded it (semihosting argv0 `cachescope+model=PROFILE`), else `off`",
        ),
        opt(
            "cores",
            Ty::UInt,
            "cores the machine has (DTB `/cpus` on QEMU virt, the board's count on the Pis); the `smp` suite uses them all",
        ),
    ],
);

/// `end`: the last record of every complete run.
pub const END: Kind = kernel(
    "end",
    "Last record of a complete run (on boards: the end-of-run marker the capture stops at).",
    &[
        req("passed", Ty::UInt, "leaf cases passed"),
        req("failed", Ty::UInt, "leaf cases failed"),
        req("skipped", Ty::UInt, "leaf cases skipped"),
    ],
);

/// `cache`: one cache level as CCSIDR describes it.
pub const CACHE: Kind = kernel(
    "cache",
    "One cache as its CCSIDR_EL1 describes it (cache suite).",
    &[
        req("level", Ty::UInt, "cache level, 1..7"),
        req("type", Ty::Str, "instruction, data or unified"),
        req("line", Ty::UInt, "line size, bytes"),
        req("ways", Ty::UInt, "associativity"),
        req("sets", Ty::UInt, "number of sets"),
        req("size", Ty::UInt, "line × ways × sets, bytes"),
        req("source", Ty::Str, "`ccsidr` (the register; architecturally only a set/way geometry)"),
    ],
);

/// `clidr`: CLIDR_EL1 decoded.
pub const CLIDR: Kind = kernel(
    "clidr",
    "CLIDR_EL1 decoded (cache suite).",
    &[
        req("raw", Ty::Hex, "raw value"),
        req("ctype", Ty::UIntList, "Ctype field per level 1..7"),
        req("levels", Ty::UInt, "levels before the first empty one"),
        req("louu", Ty::UInt, "Level of Unification, Uniprocessor"),
        req("louis", Ty::UInt, "Level of Unification, Inner Shareable"),
        req("loc", Ty::UInt, "Level of Coherence"),
        req("icb", Ty::UInt, "Inner cache boundary (0 = not disclosed)"),
        req("ccsidr_format", Ty::Str, "`32bit` or `ccidx` (FEAT_CCIDX)"),
    ],
);

/// `ctr`: CTR_EL0 decoded.
pub const CTR: Kind = kernel(
    "ctr",
    "CTR_EL0 decoded (cache suite).",
    &[
        req("raw", Ty::Hex, "raw value"),
        req("imin_line", Ty::UInt, "smallest instruction-cache line, bytes"),
        req("dmin_line", Ty::UInt, "smallest data-cache line, bytes (the by-VA maintenance stride)"),
        req("l1ip", Ty::Str, "L1 instruction-cache policy: PIPT, VIPT, AIVIVT, VPIPT"),
        req("erg", Ty::UInt, "exclusives reservation granule, bytes (0 = not provided)"),
        req("cwg", Ty::UInt, "cache writeback granule, bytes (0 = not provided)"),
        req("idc", Ty::Bool, "data clean to PoU not needed for instruction coherence"),
        req("dic", Ty::Bool, "instruction invalidation to PoU not needed for instruction coherence"),
        req("tmin_line", Ty::UIntOrNull, "smallest tag-cache line, bytes (FEAT_MTE2), null when not reported"),
    ],
);

/// `dczid`: DCZID_EL0 decoded.
pub const DCZID: Kind = kernel(
    "dczid",
    "DCZID_EL0 decoded (cache suite).",
    &[
        req("raw", Ty::Hex, "raw value"),
        req("bs", Ty::UInt, "BS field: log2 of the block in words"),
        req("block", Ty::UInt, "DC ZVA block, bytes"),
        req("dzp", Ty::Bool, "DC ZVA prohibited"),
    ],
);

/// `setway`: one set/way walk, or the walks of one benchmark phase.
pub const SETWAY: Kind = kernel(
    "setway",
    "One set/way walk: the DC ISW/CSW/CISW instructions it executed. Every walk the kernel makes is recorded; inside a benchmark phase the walks of one op and scope are added up into one record with `walks` and `phase` when the phase ends.",
    &[
        req("op", Ty::Str, "isw, csw or cisw"),
        req("scope", Ty::Str, "loc, louis or level1..level7"),
        req("ops", Ty::UInt, "DC instructions executed (0 when refused; the sum over `walks`)"),
        opt("error", Ty::Str, "why the walk was refused (then nothing was executed)"),
        opt("walks", Ty::UInt, "walks added up (absent: one)"),
        opt("phase", Ty::Str, "the benchmark phase they ran in (a metric's `phase`)"),
    ],
);

/// `maint-total`: every maintenance instruction of the run, by operation.
pub const MAINT_TOTAL: Kind = kernel(
    "maint-total",
    "Every DC, IC and TLBI instruction the kernel executed in the run, by operation, as its instruction wrappers counted them (the record before `end`). Field names are `cache::ops::MaintOp` names.",
    &[
        req("dc_isw", Ty::UInt, "DC ISW (invalidate by set/way)"),
        req("dc_csw", Ty::UInt, "DC CSW (clean by set/way)"),
        req("dc_cisw", Ty::UInt, "DC CISW (clean and invalidate by set/way)"),
        req("dc_civac", Ty::UInt, "DC CIVAC (clean and invalidate by VA to PoC)"),
        req("dc_cvac", Ty::UInt, "DC CVAC (clean by VA to PoC)"),
        req("dc_ivac", Ty::UInt, "DC IVAC (invalidate by VA to PoC)"),
        req("dc_cvau", Ty::UInt, "DC CVAU (clean by VA to PoU)"),
        req("dc_zva", Ty::UInt, "DC ZVA (zero a DCZID block)"),
        req("ic_ivau", Ty::UInt, "IC IVAU (invalidate instruction cache by VA to PoU)"),
        req("ic_iallu", Ty::UInt, "IC IALLU (invalidate all instruction caches of this PE)"),
        req("ic_ialluis", Ty::UInt, "IC IALLUIS (… of the Inner Shareable domain)"),
        req("tlbi_vmalle1is", Ty::UInt, "TLBI VMALLE1IS"),
        req("tlbi_vaae1is", Ty::UInt, "TLBI VAAE1IS"),
        req("tlbi_other", Ty::UInt, "any other TLBI"),
        req("dc_other", Ty::UInt, "any other DC (CVAP, CVADP, MTE tag operations)"),
    ],
);

/// `mmu`: the translation regime as programmed.
pub const MMU: Kind = kernel(
    "mmu",
    "The translation regime after the MMU is on (mmu suite).",
    &[
        req("sctlr", Ty::Hex, "SCTLR_EL1"),
        req("tcr", Ty::Hex, "TCR_EL1"),
        req("mair", Ty::Hex, "MAIR_EL1"),
        req("ttbr0", Ty::Hex, "TTBR0_EL1"),
        req("va_bits", Ty::UInt, "virtual address bits"),
        req("tables", Ty::UInt, "translation tables allocated"),
    ],
);

/// `attr`: one alias window's attributes as AT S1E1R reports them.
pub const ATTR: Kind = kernel(
    "attr",
    "One alias window: its mapping and what AT S1E1R + PAR_EL1 report for it (mmu suite).",
    &[
        req("name", Ty::Str, "attribute name: normal-wb, normal-wt, normal-nc, device-ngnrne, device-ngnre, device-gre"),
        req("va", Ty::Hex, "window start, VA"),
        req("pa", Ty::Hex, "window start, PA"),
        req("mair", Ty::Str, "the MAIR byte programmed, \"0x..\""),
        req("par_attr", Ty::StrOrNull, "PAR_EL1.ATTR after AT S1E1R, \"0x..\" (null when the walk failed)"),
        req("sh", Ty::StrOrNull, "PAR_EL1.SH: inner, outer, non (null when the walk failed)"),
    ],
);

/// `metric`: one measurement.
pub const METRIC: Kind = Kind {
    name: "metric",
    emitter: Emitter::Kernel,
    doc: "One measurement: the statistics of its measured windows, its identity (bench, variant, attr, bytes, params) and the timer.",
    fields: &[
        req("bench", Ty::Str, "benchmark: latency, stream, handoff, kv"),
        req("variant", Ty::Str, "variant within the benchmark"),
        req("attr", Ty::Str, "memory attribute of the region"),
        req("bytes", Ty::UInt, "working set or transfer size, bytes"),
        req_since(2, "params", Ty::Params, "the rest of the measurement's identity (e.g. tokens, stride); {} when none"),
        req_since(2, "phase", Ty::Str, "the cache-model phase of its measured windows: bench/variant/attr/bytes[/name=value…]"),
        req("reps", Ty::UInt, "measured windows"),
        req("min", Ty::Num, "best window, in `unit`"),
        req("median", Ty::Num, "median window, in `unit`"),
        req("max", Ty::Num, "worst window, in `unit`"),
        req("mad", Ty::Num, "median absolute deviation, in `unit`"),
        req("unit", Ty::Str, "ns, cycles, ns/MiB, cycles/MiB, MB/s (10^6 B/s), B/cycle"),
        req("source", Ty::Str, "timer: cntvct (generic timer), pmccntr (cycle counter); model figures carry `model`"),
        req("emulated", Ty::Bool, "measured under an emulator: the figure measures the emulator"),
        opt("table_reads", Ty::UInt, "kv-paged: block-table entries a scan reads"),
        opt("lines", Ty::UInt, "kv-paged: cache lines a scan touches"),
        opt("pages", Ty::UInt, "kv-paged: 4 KiB pages a scan touches"),
        opt("pool_blocks", Ty::UInt, "kv-prefix: pool blocks in use"),
        opt("pool_bytes", Ty::UInt, "kv-prefix: pool bytes in use"),
        opt("cores", Ty::UInt, "cores the measurement ran on"),
        opt("dtype_bytes", Ty::UInt, "kv-quant: bytes per element"),
        opt("scan_bytes_per_block", Ty::UInt, "kv-quant: bytes a one-layer scan reads per block, scale included"),
        opt("cache_hits", Ty::UInt, "alloc-reuse: requests the caching allocator served from freed blocks"),
        opt("reserved", Ty::UInt, "alloc-reuse: bytes the caching allocator holds"),
        opt("handovers_per_op", Ty::UInt, "ping-pong: ownership hand-overs per operation (2: a round trip)"),
        opt("slowdown_permille", Ty::UInt, "false sharing: shared-line time over padded time, ‰"),
        opt("cwg", Ty::UInt, "false sharing: CTR_EL0.CWG padding, bytes"),
        opt("bytes_moved", Ty::UInt, "all-reduce: bytes moved per all-reduce"),
        opt("bytes_per_load", Ty::UInt, "stream: bytes one load instruction moves"),
        opt("line", Ty::UInt, "latency (schema 1 only; now in params): pointer-chase node size"),
        opt("prefetch_distance", Ty::UInt, "stream (schema 1 only; now in params)"),
        opt("tokens", Ty::UInt, "kv (schema 1 only; now in params)"),
        opt("cached", Ty::UInt, "kv (schema 1 only; now in params)"),
        opt("stride", Ty::UInt, "kv (schema 1 only; now in params)"),
        opt("wrapped", Ty::UInt, "kv (schema 1 only; now in params)"),
    ],
};

/// `knee`: a step in a latency curve.
pub const KNEE: Kind = kernel(
    "knee",
    "A step in a latency curve: an inferred capacity (on an emulator: the host's caches, not the guest's).",
    &[
        req("attr", Ty::Str, "memory attribute of the curve"),
        req("capacity", Ty::UInt, "working set after which latency steps up, bytes"),
        req("below", Ty::Num, "latency before the step, in the curve's unit"),
        req("above", Ty::Num, "latency after the step"),
        req("source", Ty::Str, "timer of the curve"),
        req("emulated", Ty::Bool, "measured under an emulator"),
    ],
);

/// `inferred`: a cache property inferred from a sweep on the timer.
pub const INFERRED: Kind = kernel(
    "inferred",
    "A cache property the bench suite's `infer` case inferred from a timer sweep (null under an emulator: the host infers it from the cache model's counts).",
    &[
        req("property", Ty::Str, "`line` (bytes) or `ways`"),
        req("level", Ty::UInt, "cache level"),
        req("ccsidr", Ty::UInt, "what CCSIDR_EL1 says"),
        req("source", Ty::Str, "timer of the sweep"),
        req("value", Ty::UIntOrNull, "the inferred value; null when not inferred"),
        req("published", Ty::UIntOrNull, "the published silicon value; null when the core is not in the table"),
        req("emulated", Ty::Bool, "measured under an emulator"),
    ],
);

/// `expect-hazard`: what the cache model's sanitizer must report for a deliberate mistake.
pub const EXPECT_HAZARD: Kind = kernel(
    "expect-hazard",
    "A deliberate mistake's declaration (`Ctx::expect_hazard`): the sanitizer must report exactly this hazard kind at exactly these lines in this phase, and nothing else there (checked by `scripts/xtask hazards`).",
    &[
        req("phase", Ty::Str, "the deliberate mistake's cache-model phase (`mistakes/CASE`, `mmu/probe-…`)"),
        req("kind", Ty::Str, "the hazard kind (see `hazard`)"),
        req("pa", Ty::Hex, "physical address of the first line"),
        req("lines", Ty::UInt, "lines, one hazard record each"),
        req("stride", Ty::UInt, "bytes from one line to the next"),
    ],
);

/// `kv-shape`: the KV cache shape of a kv benchmark run.
pub const KV_SHAPE: Kind = kernel(
    "kv-shape",
    "The KV cache shape the kv benchmark runs with.",
    &[
        req("layers", Ty::UInt, "transformer layers"),
        req("kv_heads", Ty::UInt, "KV heads per layer"),
        req("head_dim", Ty::UInt, "head dimension"),
        req("dtype_bytes", Ty::UInt, "bytes per element"),
        req("capacity", Ty::UInt, "ring capacity, tokens"),
        req("bytes_per_token", Ty::UInt, "2 × layers × kv_heads × head_dim × dtype_bytes"),
    ],
);

/// `kv-layout`: one paged KV shape (dtype, block) of the deep-learning benchmarks.
pub const KV_LAYOUT: Kind = kernel(
    "kv-layout",
    "A paged KV cache shape a kv-quant (or kv-paged) run uses: the bytes-per-token formula's inputs and results. Dequantization is not modelled.",
    &[
        req("bench", Ty::Str, "benchmark"),
        req("dtype", Ty::Str, "fp32, fp16, bf16, fp8, int8 (b1/b2/b4: the legacy numeric kv_dtype)"),
        req("dtype_bytes", Ty::UInt, "bytes per element"),
        req("block", Ty::UInt, "tokens per block"),
        req("layers", Ty::UInt, "transformer layers"),
        req("kv_heads", Ty::UInt, "KV heads per layer"),
        req("head_dim", Ty::UInt, "head dimension"),
        req("bytes_per_token", Ty::UInt, "2 × layers × kv_heads × head_dim × dtype_bytes (scales apart)"),
        req("scale_bytes", Ty::UInt, "scale bytes per block and layer (int8/fp8: one fp32 per head for K and for V; else 0)"),
        req("bytes_per_block", Ty::UInt, "bytes per block over every layer, scales included (÷ block: bytes per token with scales)"),
        req("scan_bytes_per_block", Ty::UInt, "bytes a one-layer scan reads per block, scale included (a cache of C bytes holds C × block ÷ this tokens)"),
    ],
);

/// `alloc-trace`: the caching allocator after a seeded transformer-step trace.
pub const ALLOC_TRACE: Kind = kernel(
    "alloc-trace",
    "The size-class caching allocator (alloc-reuse) after a seeded allocation/free trace shaped like transformer training steps, in the terms of torch.cuda.memory_stats().",
    &[
        req("seed", Ty::UInt, "trace seed"),
        req("layers", Ty::UInt, "layers in the trace"),
        req("hidden", Ty::UInt, "bytes of one activation row"),
        req("steps", Ty::UInt, "training steps"),
        req("allocs", Ty::UInt, "requests served"),
        req("cache_hits", Ty::UInt, "requests served from a cached (freed) block"),
        req("peak_requested", Ty::UInt, "highest live requested bytes"),
        req("peak_allocated", Ty::UInt, "highest live bytes in size-class blocks"),
        req("allocated", Ty::UInt, "live bytes at the end (in use)"),
        req("reserved", Ty::UInt, "bytes taken from the arena (in use + cached), at the end"),
    ],
);

/// `bench-model`: the cache-model speed benchmark's loop (tests/model.rs).
pub const BENCH_MODEL: Kind = kernel(
    "bench-model",
    "One memory-bound loop of the cache-model speed benchmark (model test kernel, `only=bench`).",
    &[
        req("pattern", Ty::Str, "seq or chase"),
        req("accesses", Ty::UInt, "loads executed"),
        req("bytes", Ty::UInt, "working set, bytes"),
        req("ticks", Ty::UInt, "generic-timer ticks of the loop"),
        req("cntfrq", Ty::UInt, "timer frequency, Hz"),
        req("ms", Ty::UInt, "loop time, ms (host time under TCG)"),
    ],
);

/// A cache-model kind's fields: the given leading fields, the six per-level counts, `source`.
macro_rules! model_counts {
    ($($head:expr),*) => {
        &[
            $($head,)*
            req("accesses", Ty::UInt, "accesses that reached this level"),
            req("hits", Ty::UInt, "of which hits"),
            req("misses", Ty::UInt, "of which misses"),
            req("writebacks", Ty::UInt, "dirty lines written to the next level"),
            req("maint", Ty::UInt, "lines touched by maintenance operations"),
            req("bypass", Ty::UInt, "accesses that bypassed the caches (non-cacheable, Device, caches off)"),
            req("prefetches", Ty::UInt, "lines this level filled because of a prefetch (PRFM or the hardware prefetcher); a prefetch that finds the line present is not counted"),
            req("prefetch_hits", Ty::UInt, "demand accesses that hit a prefetched line no demand access had touched yet (once per fill)"),
            req("source", Ty::Str, "`model`"),
        ]
    };
}

/// `model-geometry`: one modelled cache.
pub const MODEL_GEOMETRY: Kind = model(
    "model-geometry",
    "One cache the model simulates.",
    &[
        req("level", Ty::Str, "L1I, L1D, L2, L3"),
        req("size", Ty::UInt, "bytes"),
        req("line", Ty::UInt, "line size, bytes"),
        req("sets", Ty::UInt, "sets"),
        req("ways", Ty::UInt, "ways"),
        req("sharing", Ty::Str, "private or shared"),
        req("policy", Ty::Str, "replacement policy: lru, fifo, random, plru when every level has it and nothing is inclusive; else the hierarchy's per-level spelling `L1I/L1D/L2/L3` with `+incl` on an inclusive level (e.g. `lru/lru/random+incl/lru`; [cache-model.md](cache-model.md))"),
        req("origin", Ty::Str, "guest (the kernel's CCSIDR), a profile name, or the plugin arguments"),
        req("vcpus", Ty::UInt, "vCPUs"),
        req("hit_cycles", Ty::UInt, "modelled load-to-use latency of a hit in this level, core cycles"),
        req("hit_ns", Ty::Num, "the same in ns at the profile's clock"),
        req("source", Ty::Str, "`model`"),
    ],
);

/// `model`: one level's counts in one phase.
pub const MODEL: Kind = model(
    "model",
    "One cache level's counts during one named phase (a benchmark's measured windows).",
    model_counts!(
        req("phase", Ty::Str, "phase name (a metric's `phase`)"),
        req("phase_id", Ty::UInt, "phase id"),
        req("level", Ty::Str, "L1I, L1D, L2, L3")
    ),
);

/// `model-total`: one level's counts over the whole run.
pub const MODEL_TOTAL: Kind =
    model("model-total", "One cache level's counts over the whole run.", model_counts!(req("level", Ty::Str, "L1I, L1D, L2, L3")));

/// A coherence kind's fields: the given leading fields, the six per-vCPU counts, `source`.
macro_rules! coherence_counts {
    ($($head:expr),*) => {
        &[
            $($head,)*
            req("cpu", Ty::UInt, "vCPU index"),
            req("invalidations", Ty::UInt, "this core's private copies invalidated by another core's write (one per snoop that found the line)"),
            req("interventions", Ty::UInt, "this core's requests whose snoop found the line dirty in another core, which supplied it"),
            req("upgrades", Ty::UInt, "this core's writes to a line it held Shared (S to M, no data)"),
            req("snoop_hits", Ty::UInt, "other cores' snoops that found the line in this core's private caches"),
            req("snoop_misses", Ty::UInt, "other cores' snoops that did not (a snoop filter would have spared them)"),
            req("remote_maint", Ty::UInt, "other cores' broadcast maintenance (DC by VA, IC IVAU, IC IALLUIS) that reached this core's caches"),
            req("buf_invalidations", Ty::UInt, "of `invalidations`, those of lines in the kernel's declared attribute windows (its benchmark buffers; not its stacks, heap or barriers)"),
            req("buf_interventions", Ty::UInt, "of `interventions`, those of lines in the declared windows"),
            req("buf_upgrades", Ty::UInt, "of `upgrades`, those of lines in the declared windows"),
            req("source", Ty::Str, "`model`"),
        ]
    };
}

/// `model-coherence`: one vCPU's coherence counts in one phase.
pub const MODEL_COHERENCE: Kind = model(
    "model-coherence",
    "One vCPU's coherence counts (MESI between the private caches, docs/cache-model.md) during one named phase; one per vCPU when the phase ends. Only with more than one vCPU.",
    coherence_counts!(req("phase", Ty::Str, "phase name (a metric's `phase`)"), req("phase_id", Ty::UInt, "phase id")),
);

/// `model-coherence-total`: one vCPU's coherence counts over the whole run.
pub const MODEL_COHERENCE_TOTAL: Kind = model(
    "model-coherence-total",
    "One vCPU's coherence counts over the whole run (at exit, one per vCPU; only with more than one vCPU).",
    coherence_counts!(),
);

/// `model-run`: the model's bookkeeping at exit.
pub const MODEL_RUN: Kind = model(
    "model-run",
    "The model's bookkeeping at the end of the run.",
    &[
        req("protocol", Ty::UInt, "marker protocol version the plugin speaks"),
        req("markers", Ty::UInt, "markers received"),
        req("phases", Ty::UInt, "phases completed"),
        req("va_learned", Ty::UInt, "by-VA operations translated from the guest's own accesses"),
        req("va_window", Ty::UInt, "… from a window's declared PA"),
        req("va_identity", Ty::UInt, "… as PA = VA"),
        req("setway_ops", Ty::UInt, "DC set/way instructions decoded"),
        req("warnings", Ty::UInt, "model-warning records"),
        req("fast", Ty::Bool, "the shortcuts were on"),
        req("source", Ty::Str, "`model`"),
    ],
);

/// `model-warning`: something the model could not follow.
pub const MODEL_WARNING: Kind = model(
    "model-warning",
    "Something the model could not follow (a malformed marker, a phase never ended).",
    &[req("what", Ty::Str, "the problem"), req("source", Ty::Str, "`model`")],
);

/// `model-profile`: the modelled core's latency table and hardware prefetcher, once per run.
pub const MODEL_PROFILE: Kind = model(
    "model-profile",
    "The modelled core: clock, memory latency and hardware prefetcher, with their sources (once per run, before `model-geometry`).",
    &[
        req("profile", Ty::Str, "guest, rpi4, rpi5 or custom"),
        req("clock_mhz", Ty::UInt, "core clock the cycle figures refer to, MHz"),
        req("memory_cycles", Ty::UInt, "latency of an access served by memory (and of every access that bypasses the caches), cycles"),
        req("memory_ns", Ty::Num, "the same in ns"),
        req("hwpf", Ty::Str, "hardware data prefetcher: off, nextline, stride"),
        req("hwpf_distance", Ty::UInt, "lines (nextline) or strides (stride) ahead"),
        req("hwpf_degree", Ty::UInt, "prefetches per trigger"),
        req("latency_ref", Ty::Str, "where the latencies come from"),
        req("hwpf_ref", Ty::Str, "which published prefetcher the model approximates"),
        req("source", Ty::Str, "`model`"),
    ],
);

/// `model-time`: a phase's modelled time.
pub const MODEL_TIME: Kind = model(
    "model-time",
    "A phase's modelled data-access time: each demand data access costs the latency of the level that served it, without overlap (an upper bound for streaming code).",
    &[
        req("phase", Ty::Str, "phase name"),
        req("phase_id", Ty::UInt, "phase id"),
        req("data_accesses", Ty::UInt, "demand data accesses, per L1D line touched, including bypassing ones"),
        req("cycles", Ty::UInt, "modelled cycles"),
        req("ns", Ty::Num, "modelled ns at the profile's clock"),
        req("source", Ty::Str, "`model`"),
    ],
);

/// `hazard`: a cache-maintenance mistake the model's sanitizer saw.
pub const HAZARD: Kind = model(
    "hazard",
    "A cache-maintenance hazard, deduplicated per (kind, line, phase): emitted when the phase ends (at exit outside phases).",
    &[
        req("kind", Ty::Str, "stale-read-by-device, lost-write, stale-read-by-cpu, stale-instruction, maintenance-gap"),
        req("pa", Ty::Hex, "physical address of the line"),
        req("va", Ty::Hex, "virtual address of the first exposing access"),
        req("pc", Ty::Hex, "PC of the first exposing access"),
        req("phase", Ty::Str, "phase name (empty outside phases)"),
        req("phase_id", Ty::UInt, "phase id (0 outside phases)"),
        req("count", Ty::UInt, "occurrences in this phase"),
        req("access", Ty::Str, "the exposing access: nc-read, device-read, dc-ivac, dc-isw, read, fetch, maint-end"),
        req("cause", Ty::Str, "the earlier access that made the line hazardous: write, nc-write, device-write, …"),
        req("cause_pc", Ty::Hex, "PC of that access (0x0 when not known)"),
        opt("stale", Ty::Hex, "the value the exposing access would see on silicon, when known"),
        opt("current", Ty::Hex, "the value the emulator returned or holds, when known"),
        req("source", Ty::Str, "`model`"),
    ],
);

/// `hazard-total`: the sanitizer's whole-run summary.
pub const HAZARD_TOTAL: Kind = model(
    "hazard-total",
    "The sanitizer's summary at exit: hazard records per kind (distinct (kind, line, phase)), all occurrences, and whether the bound on hazard records cut the list short.",
    &[
        req("sanitize", Ty::Bool, "the sanitizer ran"),
        req("hazards", Ty::UInt, "hazard records"),
        req("count", Ty::UInt, "occurrences"),
        req("stale_read_by_device", Ty::UInt, "hazard records of this kind"),
        req("lost_write", Ty::UInt, "…"),
        req("stale_read_by_cpu", Ty::UInt, "…"),
        req("stale_instruction", Ty::UInt, "…"),
        req("maintenance_gap", Ty::UInt, "…"),
        req(
            "truncated",
            Ty::Bool,
            "more distinct hazards than the plugin records in a run (10,000): the rest were only counted (`dropped`); the run fails",
        ),
        req("dropped", Ty::UInt, "occurrences of hazards not recorded because of that bound (0 when not truncated)"),
        req("source", Ty::Str, "`model`"),
    ],
);

/// `sanitizer-finding`: a phase that failed the sanitizer's verdict.
pub const SANITIZER_FINDING: Kind = runner(
    "sanitizer-finding",
    "A phase that failed the sanitizer's verdict (a declared hazard not seen exactly, or a hazard in a phase that declared none), judged by the runner after QEMU exits; at most 20 per run.",
    &[
        req("phase", Ty::Str, "the phase (empty: outside any phase)"),
        req("case", Ty::Str, "the KTAP case that declared the phase (`suite.case`), empty when none did"),
        req("declared", Ty::Bool, "whether the phase declared a deliberate mistake (`expect-hazard`)"),
        req("what", Ty::Str, "what was declared, missing and unexpected, as kind@line"),
        req("source", Ty::Str, "`runner`"),
    ],
);

/// `sanitizer-verdict`: the sanitizer's verdict on the run, folded into its exit status.
pub const SANITIZER_VERDICT: Kind = runner(
    "sanitizer-verdict",
    "The cache-model sanitizer's verdict on the run (`cachescope-report verdict`), appended by the runner after QEMU exits: a failed verdict makes a passing run exit 1.",
    &[
        req("verdict", Ty::Str, "as-declared (every declared hazard exactly, none elsewhere), failed, or off (sanitize=off)"),
        req("declared_phases", Ty::UInt, "phases that declared a deliberate mistake"),
        req("failed_phases", Ty::UInt, "phases that failed"),
        req("first", Ty::Str, "the first failure, `phase: what` (empty when none)"),
        req("source", Ty::Str, "`runner`"),
    ],
);

/// Every record kind, kernel first.
pub const KINDS: &[Kind] = &[
    BOOT,
    END,
    CACHE,
    CLIDR,
    CTR,
    DCZID,
    SETWAY,
    MAINT_TOTAL,
    MMU,
    ATTR,
    METRIC,
    KNEE,
    INFERRED,
    EXPECT_HAZARD,
    KV_SHAPE,
    KV_LAYOUT,
    ALLOC_TRACE,
    BENCH_MODEL,
    MODEL_PROFILE,
    MODEL_GEOMETRY,
    MODEL,
    MODEL_TIME,
    MODEL_TOTAL,
    MODEL_COHERENCE,
    MODEL_COHERENCE_TOTAL,
    MODEL_RUN,
    MODEL_WARNING,
    HAZARD,
    HAZARD_TOTAL,
    SANITIZER_FINDING,
    SANITIZER_VERDICT,
];

/// The declaration of record kind `name`.
pub fn kind(name: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.name == name)
}

/// What a measurement is of: its identity, the same in the `metric` record (`bench`, `variant`,
/// `attr`, `bytes`, `params`) and in the name of the cache-model phase of its measured windows
/// (`phase`, this type's `Display`): `bench/variant/attr/bytes` then `/name=value` per parameter.
#[derive(Clone, Copy, Debug)]
pub struct MetricId<'a> {
    /// Benchmark.
    pub bench: &'a str,
    /// Variant.
    pub variant: &'a str,
    /// Memory attribute.
    pub attr: &'a str,
    /// Working set or transfer size, bytes.
    pub bytes: u64,
    /// The other parameters that tell two measurements apart, in a fixed order.
    pub params: &'a [(&'a str, u64)],
}

impl fmt::Display for MetricId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}/{}", self.bench, self.variant, self.attr, self.bytes)?;
        for (k, v) in self.params {
            write!(f, "/{k}={v}")?;
        }
        Ok(())
    }
}

/// Writes docs/records.md: every kind with its fields (a test keeps the file equal to this).
pub fn write_markdown(out: &mut dyn fmt::Write) -> fmt::Result {
    writeln!(out, "# Records (schema {SCHEMA})")?;
    writeln!(out)?;
    writeln!(out, "<!-- Generated from crates/cachescope-arch/src/record.rs (`record::write_markdown`); do not edit by hand:")?;
    writeln!(out, "     UPDATE_DOCS=1 cargo test -p cachescope-arch --target host-tuple records_doc rewrites it. -->")?;
    writeln!(out)?;
    writeln!(out, "Every fact and measurement is also a record: a KTAP diagnostic line `{PREFIX}{{json}}` (at the line's KTAP")?;
    writeln!(out, "indentation) holding one JSON object whose `\"record\"` field names its kind, then the fields below in")?;
    writeln!(out, "this order. Kernel records are part of the KTAP document (`boot` first, `end` last); cache-model records")?;
    writeln!(out, "come from the QEMU plugin's own output. Schema 1 logs (no `params`/`phase` in `metric`, no `args` in")?;
    writeln!(out, "`boot`) are still read as before: any kind, and a metric's further integer fields were its parameters.")?;
    for k in KINDS {
        writeln!(out)?;
        let who = match k.emitter {
            Emitter::Kernel => "kernel",
            Emitter::Model => "cache model",
            Emitter::Runner => "runner",
        };
        writeln!(out, "## `{}` ({who})", k.name)?;
        writeln!(out)?;
        writeln!(out, "{}", k.doc)?;
        writeln!(out)?;
        writeln!(out, "| field | type | required | meaning |")?;
        writeln!(out, "|---|---|---|---|")?;
        for f in k.fields {
            write!(out, "| `{}` | ", f.name)?;
            for c in f.ty.name().chars() {
                if c == '|' {
                    out.write_str("\\|")?;
                } else {
                    out.write_char(c)?;
                }
            }
            write!(out, " | ")?;
            match (f.required, f.since) {
                (true, 1) => write!(out, "yes")?,
                (true, since) => write!(out, "from schema {since}")?,
                (false, _) => write!(out, "no")?,
            }
            writeln!(out, " | {} |", f.doc)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    #[test]
    fn kinds_are_unique_and_well_formed() {
        for (i, k) in KINDS.iter().enumerate() {
            assert!(KINDS[..i].iter().all(|o| o.name != k.name), "{} declared twice", k.name);
            for (j, f) in k.fields.iter().enumerate() {
                assert!(k.fields[..j].iter().all(|o| o.name != f.name), "{}.{} declared twice", k.name, f.name);
                assert!(f.name != "record" && (1..=SCHEMA).contains(&f.since), "{}.{}", k.name, f.name);
            }
        }
        assert!(kind("boot").unwrap().field("schema").unwrap().required);
        assert!(kind("nosuch").is_none());
    }

    #[test]
    fn maint_total_fields_are_the_operations() {
        let names: std::vec::Vec<&str> = MAINT_TOTAL.fields.iter().map(|f| f.name).collect();
        let ops: std::vec::Vec<&str> = crate::cache::ops::MaintOp::ALL.iter().map(|op| op.name()).collect();
        assert_eq!(names, ops);
    }

    #[test]
    fn metric_ids() {
        let none = MetricId { bench: "latency", variant: "chase", attr: "normal-wb", bytes: 4096, params: &[] };
        assert_eq!(std::format!("{none}"), "latency/chase/normal-wb/4096");
        let kv = MetricId { params: &[("tokens", 320), ("wrapped", 1)], ..none };
        assert_eq!(std::format!("{kv}"), "latency/chase/normal-wb/4096/tokens=320/wrapped=1");
    }

    /// docs/records.md equals what [`write_markdown`] generates (`UPDATE_DOCS=1` rewrites it).
    #[test]
    fn records_doc() {
        let mut want = String::new();
        write_markdown(&mut want).unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/records.md");
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(have == want, "{} is not what record::write_markdown generates: run UPDATE_DOCS=1 cargo test -p cachescope-arch --target host-tuple records_doc", path.display());
    }
}
