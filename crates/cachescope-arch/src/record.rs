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
//!
//! Each kind declared with `kind!` also has a typed builder (emitters: the kernel, the plugin, the
//! runner; the `alloc` feature) and a typed view (readers: the host tools), named after it: `END`
//! → `End` and [`EndView`]. A builder has one setter per declared field, taking the field's type,
//! called in declaration order (the wire order):
//!
//! ```
//! use cachescope_arch::record::{self, Builder};
//! let end = record::End::new().passed(3).failed(0).skipped(1);
//! assert_eq!(end.finish(), r#"{"record":"end","passed":3,"failed":0,"skipped":1}"#);
//! ```
//!
//! A field the kind does not declare is a compile error (here a misspelt `skipped`):
//!
//! ```compile_fail
//! use cachescope_arch::record;
//! let end = record::End::new().passed(3).failed(0).skiped(1);
//! ```
//!
//! So is a value of another type than the field's (`passed` is a `uint`):
//!
//! ```compile_fail
//! use cachescope_arch::record;
//! let end = record::End::new().passed("3").failed(0).skipped(1);
//! ```

use core::fmt;

#[cfg(feature = "alloc")]
mod emit;
pub mod view;

#[cfg(feature = "alloc")]
pub use emit::{check, push_json_str, Broken, Builder, Record, Value};
pub use view::{Object, View};

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
pub struct RecordKind {
    /// The `"record"` value.
    pub name: &'static str,
    /// Who emits it.
    pub emitter: Emitter,
    /// When and why.
    pub doc: &'static str,
    /// Its fields after `"record"`, in wire order.
    pub fields: &'static [Field],
}

impl RecordKind {
    /// The declaration of field `name`.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

const fn field(name: &'static str, ty: Ty, required: bool, since: u32, doc: &'static str) -> Field {
    Field { name, ty, required, since, doc }
}

/// A field's JSON key from its declared identifier (`r#type` is the key `type`).
const fn wire_name(ident: &'static str) -> &'static str {
    match ident.as_bytes() {
        [b'r', b'#', ..] => ident.split_at(2).1,
        _ => ident,
    }
}

macro_rules! emitter {
    (kernel) => {
        Emitter::Kernel
    };
    (model) => {
        Emitter::Model
    };
    (runner) => {
        Emitter::Runner
    };
}

macro_rules! required {
    (req) => {
        true
    };
    (req_since) => {
        true
    };
    (opt) => {
        false
    };
}

macro_rules! since {
    () => {
        1
    };
    ($since:literal) => {
        $since
    };
}

/// A builder's setter of one field, by the field's type.
#[cfg_attr(not(feature = "alloc"), allow(unused_macros))]
macro_rules! setter {
    ($f:ident, $doc:literal, $arg:ty, |$v:ident| $value:expr) => {
        #[doc = concat!("`", stringify!($f), "`: ", $doc, ".")]
        #[inline]
        pub fn $f(mut self, $v: $arg) -> Self {
            self.rec = self.rec.value(wire_name(stringify!($f)), $value);
            self
        }
    };
    ($f:ident, Str, $doc:literal) => {
        setter!($f, $doc, &str, |v| Value::Str(v));
    };
    ($f:ident, UInt, $doc:literal) => {
        setter!($f, $doc, u64, |v| Value::UInt(v));
    };
    ($f:ident, Hex, $doc:literal) => {
        setter!($f, $doc, u64, |v| Value::Hex(v));
    };
    ($f:ident, Bool, $doc:literal) => {
        setter!($f, $doc, bool, |v| Value::Bool(v));
    };
    ($f:ident, UIntOrNull, $doc:literal) => {
        setter!($f, $doc, Option<u64>, |v| v.map_or(Value::Null, Value::UInt));
    };
    ($f:ident, StrOrNull, $doc:literal) => {
        setter!($f, $doc, Option<&str>, |v| v.map_or(Value::Null, Value::Str));
    };
    ($f:ident, UIntList, $doc:literal) => {
        setter!($f, $doc, &[u64], |v| Value::UIntList(v));
    };
    ($f:ident, Params, $doc:literal) => {
        setter!($f, $doc, &[(&str, u64)], |v| Value::Params(v));
    };
    ($f:ident, Num, $doc:literal) => {
        #[doc = concat!("`", stringify!($f), "`: ", $doc, "; written with `decimals` decimals (`null` when not finite).")]
        #[inline]
        pub fn $f(mut self, v: f64, decimals: usize) -> Self {
            self.rec = self.rec.value(wire_name(stringify!($f)), Value::Num(v, decimals));
            self
        }
    };
}

/// A view's accessor of one field, by the field's type.
macro_rules! getter {
    ($l:lifetime, $f:ident, $doc:literal, $ret:ty, $get:ident) => {
        #[doc = concat!("`", stringify!($f), "`: ", $doc, ".")]
        pub fn $f(&self) -> Option<$ret> {
            self.obj.$get(wire_name(stringify!($f)))
        }
    };
    ($l:lifetime, $f:ident, Str, $doc:literal) => {
        getter!($l, $f, $doc, &$l str, str);
    };
    ($l:lifetime, $f:ident, StrOrNull, $doc:literal) => {
        getter!($l, $f, $doc, &$l str, str);
    };
    ($l:lifetime, $f:ident, UInt, $doc:literal) => {
        getter!($l, $f, $doc, u64, uint);
    };
    ($l:lifetime, $f:ident, UIntOrNull, $doc:literal) => {
        getter!($l, $f, $doc, u64, uint);
    };
    ($l:lifetime, $f:ident, Num, $doc:literal) => {
        getter!($l, $f, $doc, f64, num);
    };
    ($l:lifetime, $f:ident, Hex, $doc:literal) => {
        getter!($l, $f, $doc, u64, hex);
    };
    ($l:lifetime, $f:ident, Bool, $doc:literal) => {
        getter!($l, $f, $doc, bool, bool);
    };
    ($l:lifetime, $f:ident, UIntList, $doc:literal) => {
        getter!($l, $f, $doc, &$l O::List, list);
    };
    ($l:lifetime, $f:ident, Params, $doc:literal) => {
        getter!($l, $f, $doc, &$l O::Map, map);
    };
}

/// One record kind, declared once: its [`RecordKind`] data (docs/records.md and the host's contract
/// check), its typed builder (one setter per field; an undeclared field does not compile) and
/// its typed view (one accessor per field).
///
/// `CONST, Builder, View = emitter("name", "doc", [req(field, Ty, "doc"), …])`; `req_since(N,
/// …)` for a field required from schema N, `opt(…)` for an optional one. A kind that embeds a
/// group of fields declared elsewhere (the per-level counts) is written `[head…] + Group::method
/// + [tail…]` inside the group's macro, which appends the group's fields.
macro_rules! kind {
    (
        $(#[$m:meta])*
        $K:ident, $B:ident, $V:ident = $em:ident($name:literal, $doc:literal, [$($head:tt)*] + $G:ident::$method:ident + [$($tail:tt)*] $(,)?)
        [$($greq:ident($gf:ident, $gty:ident, $gdoc:literal),)*]
    ) => {
        kind! { $(#[$m])* $K, $B, $V = $em($name, $doc, [$($head)* $($greq($gf, $gty, $gdoc),)* $($tail)*]) }

        #[cfg(feature = "alloc")]
        impl $B {
            #[doc = concat!("Every field of [`", stringify!($G), "`] from `c`.")]
            #[inline]
            pub fn $method(self, c: &$G) -> Self {
                self$(.$gf(c.$gf))*
            }
        }

        impl<'a, O: view::Object + ?Sized> $V<'a, O> {
            #[doc = concat!("Every field of [`", stringify!($G), "`] (0 where one is absent).")]
            pub fn $method(&self) -> $G {
                $G { $($gf: self.$gf().unwrap_or(0)),* }
            }
        }
    };
    (
        $(#[$m:meta])*
        $K:ident, $B:ident, $V:ident = $em:ident($name:literal, $doc:literal, [$($head:tt)*] + .. + [$($tail:tt)*] $(,)?)
        [$($group:tt)*]
    ) => {
        kind! { $(#[$m])* $K, $B, $V = $em($name, $doc, [$($head)* $($group)* $($tail)*]) }
    };
    (
        $(#[$m:meta])*
        $K:ident, $B:ident, $V:ident = $em:ident($name:literal, $doc:literal, [
            $($req:ident($($since:literal,)? $f:ident, $ty:ident, $fdoc:literal $(,)?),)*
        ] $(,)?)
    ) => {
        $(#[$m])*
        pub const $K: RecordKind = RecordKind {
            name: $name,
            emitter: emitter!($em),
            doc: $doc,
            fields: &[$(field(wire_name(stringify!($f)), Ty::$ty, required!($req), since!($($since)?), $fdoc),)*],
        };

        #[doc = concat!("Builds a `", $name, "` record ([`", stringify!($K), "`]): one setter per declared field, called in declaration order (the wire order; debug builds check it and the required fields when the record is finished).")]
        #[cfg(feature = "alloc")]
        #[must_use = "a record is only built: emit or finish it"]
        #[derive(Debug)]
        pub struct $B {
            rec: Record,
        }

        #[cfg(feature = "alloc")]
        impl $B {
            #[doc = concat!("A `", $name, "` record with no field set yet.")]
            #[inline]
            pub fn new() -> Self {
                Self { rec: Record::new(&$K) }
            }

            $(setter!($f, $ty, $fdoc);)*
        }

        #[cfg(feature = "alloc")]
        impl Default for $B {
            fn default() -> Self {
                Self::new()
            }
        }

        #[cfg(feature = "alloc")]
        impl Builder for $B {
            const KIND: &'static RecordKind = &$K;

            fn record(&self) -> &Record {
                &self.rec
            }

            fn into_record(self) -> Record {
                self.rec
            }
        }

        #[doc = concat!("A `", $name, "` record read through typed accessors ([`", stringify!($K), "`]).")]
        #[derive(Debug)]
        pub struct $V<'a, O: ?Sized> {
            obj: &'a O,
        }

        impl<O: ?Sized> Clone for $V<'_, O> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<O: ?Sized> Copy for $V<'_, O> {}

        impl<'a, O: view::Object + ?Sized> view::View<'a, O> for $V<'a, O> {
            const KIND: &'static RecordKind = &$K;

            fn of(obj: &'a O) -> Option<Self> {
                (obj.str("record") == Some($name)).then_some(Self { obj })
            }
        }

        impl<'a, O: view::Object + ?Sized> $V<'a, O> {
            #[doc = concat!("The view of `obj` when it is a `", $name, "` record.")]
            pub fn of(obj: &'a O) -> Option<Self> {
                <Self as view::View<'a, O>>::of(obj)
            }

            /// The object viewed (for fields the contract does not declare: a schema-1 record's
            /// extra parameters).
            pub fn object(&self) -> &'a O {
                self.obj
            }

            $(getter!('a, $f, $ty, $fdoc);)*
        }
    };
}

/// A group of fields several kinds share, declared once: the `…` of `[head…] + Group::method +
/// […]`, and the plain struct the simulator counts in ([`LevelCounts`]).
macro_rules! group_struct {
    ($(#[$m:meta])* $G:ident [$(req($f:ident, UInt, $doc:literal),)*]) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $G {
            $(#[doc = concat!($doc, ".")] pub $f: u64,)*
        }

        impl core::ops::Add for $G {
            type Output = $G;
            /// Field by field, wrapping.
            fn add(self, o: $G) -> $G {
                $G { $($f: self.$f.wrapping_add(o.$f)),* }
            }
        }

        impl core::ops::Sub for $G {
            type Output = $G;
            /// Field by field, wrapping.
            fn sub(self, o: $G) -> $G {
                $G { $($f: self.$f.wrapping_sub(o.$f)),* }
            }
        }
    };
}

/// The per-level counts of the `model` and `model-total` kinds (and the simulator's counters,
/// [`LevelCounts`]): hands its field list to `$cb`.
macro_rules! level_counts {
    ($cb:ident! { $($args:tt)* }) => {
        $cb! { $($args)* [
            req(accesses, UInt, "accesses that reached this level"),
            req(hits, UInt, "of which hits"),
            req(misses, UInt, "of which misses"),
            req(writebacks, UInt, "dirty lines written to the next level"),
            req(maint, UInt, "lines touched by maintenance operations"),
            req(bypass, UInt, "accesses that bypassed the caches (non-cacheable, Device, caches off)"),
            req(prefetches, UInt, "lines this level filled because of a prefetch (PRFM or the hardware prefetcher); a prefetch that finds the line present is not counted"),
            req(prefetch_hits, UInt, "demand accesses that hit a prefetched line no demand access had touched yet (once per fill)"),
        ] }
    };
}

/// The per-vCPU coherence counts of `model-coherence` and `model-coherence-total`: hands its
/// field list to `$cb`.
macro_rules! coherence_counts {
    ($cb:ident! { $($args:tt)* }) => {
        $cb! { $($args)* [
            req(invalidations, UInt, "this core's private copies invalidated by another core's write (one per snoop that found the line)"),
            req(interventions, UInt, "this core's requests whose snoop found the line dirty in another core, which supplied it"),
            req(upgrades, UInt, "this core's writes to a line it held Shared (S to M, no data)"),
            req(snoop_hits, UInt, "other cores' snoops that found the line in this core's private caches"),
            req(snoop_misses, UInt, "other cores' snoops that did not (a snoop filter would have spared them)"),
            req(remote_maint, UInt, "other cores' broadcast maintenance (DC by VA, IC IVAU, IC IALLUIS) that reached this core's caches"),
            req(buf_invalidations, UInt, "of `invalidations`, those of lines in the kernel's declared attribute windows (its benchmark buffers; not its stacks, heap or barriers)"),
            req(buf_interventions, UInt, "of `interventions`, those of lines in the declared windows"),
            req(buf_upgrades, UInt, "of `upgrades`, those of lines in the declared windows"),
            req(cross_invalidations, UInt, "of `invalidations`, those by a core in another cluster (the profile's topology)"),
            req(cross_interventions, UInt, "of `interventions`, those supplied by a core in another cluster"),
            req(cross_remote_maint, UInt, "of `remote_maint`, those issued by a core in another cluster"),
            req(cluster_handovers, UInt, "this core's demand data accesses served by a dirty copy in a core of its own cluster (each costs the in-cluster hand-over latency)"),
            req(cross_handovers, UInt, "the same, served from a core in another cluster (the cross-cluster hand-over latency)"),
            req(buf_cluster_handovers, UInt, "of `cluster_handovers`, those of lines in the declared windows"),
            req(buf_cross_handovers, UInt, "of `cross_handovers`, those of lines in the declared windows"),
        ] }
    };
}

level_counts!(group_struct! {
    /// One cache level's counters: the simulator counts in it and the `model` / `model-total`
    /// records carry it (their builders' and views' `counts`), declared once with the records.
    LevelCounts
});

kind! {
    /// `boot`: the first record of every run.
    BOOT, Boot, BootView = kernel(
    "boot",
    "First record of a run: where and how the kernel runs.",
    [
        req(schema, UInt, "wire-format version (this document: 2; readers accept 1)"),
        req(el, UInt, "exception level at entry (1, 2 or 3)"),
        req(current_el, UInt, "exception level the suites run at (always 1)"),
        req(board, Str, "board the kernel was built for: qemu-virt, rpi4, rpi5"),
        req(midr, Hex, "MIDR_EL1"),
        req(cpu, Str, "core name decoded from MIDR, or `unknown`"),
        req(cntfrq, UInt, "generic timer frequency, Hz (CNTFRQ_EL0)"),
        req(dtb, Bool, "a valid device tree was found"),
        req(ram_base, Hex, "RAM base (DTB, else the board default)"),
        req(ram_size, UInt, "RAM size, bytes"),
        req(uart, Hex, "console PL011 base address"),
        req(emulated, Bool, "running under QEMU: timings measure the emulator"),
        req_since(2, args, Str, "the kernel arguments of the run, control characters escaped"),
        opt(model, Str,
            "the cache model's profile when the runner loaded it (semihosting argv0 `cachescope+model=PROFILE`), else `off`",
        ),
        opt(cores, UInt,
            "cores the machine has (DTB `/cpus` on QEMU virt, the board's count on the Pis); the `smp` suite uses them all",
        ),
    ],
) }

kind! {
    /// `end`: the last record of every complete run.
    END, End, EndView = kernel(
    "end",
    "Last record of a complete run (on boards: the end-of-run marker the capture stops at).",
    [
        req(passed, UInt, "leaf cases passed"),
        req(failed, UInt, "leaf cases failed"),
        req(skipped, UInt, "leaf cases skipped"),
    ],
) }

kind! {
    /// `cache`: one cache level as CCSIDR describes it.
    CACHE, Cache, CacheView = kernel(
    "cache",
    "One cache as its CCSIDR_EL1 describes it (cache suite).",
    [
        req(level, UInt, "cache level, 1..7"),
        req(r#type, Str, "instruction, data or unified"),
        req(line, UInt, "line size, bytes"),
        req(ways, UInt, "associativity"),
        req(sets, UInt, "number of sets"),
        req(size, UInt, "line × ways × sets, bytes"),
        req(source, Str, "`ccsidr` (the register; architecturally only a set/way geometry)"),
    ],
) }

kind! {
    /// `clidr`: CLIDR_EL1 decoded.
    CLIDR, Clidr, ClidrView = kernel(
    "clidr",
    "CLIDR_EL1 decoded (cache suite).",
    [
        req(raw, Hex, "raw value"),
        req(ctype, UIntList, "Ctype field per level 1..7"),
        req(levels, UInt, "levels before the first empty one"),
        req(louu, UInt, "Level of Unification, Uniprocessor"),
        req(louis, UInt, "Level of Unification, Inner Shareable"),
        req(loc, UInt, "Level of Coherence"),
        req(icb, UInt, "Inner cache boundary (0 = not disclosed)"),
        req(ccsidr_format, Str, "`32bit` or `ccidx` (FEAT_CCIDX)"),
    ],
) }

kind! {
    /// `ctr`: CTR_EL0 decoded.
    CTR, Ctr, CtrView = kernel(
    "ctr",
    "CTR_EL0 decoded (cache suite).",
    [
        req(raw, Hex, "raw value"),
        req(imin_line, UInt, "smallest instruction-cache line, bytes"),
        req(dmin_line, UInt, "smallest data-cache line, bytes (the by-VA maintenance stride)"),
        req(l1ip, Str, "L1 instruction-cache policy: PIPT, VIPT, AIVIVT, VPIPT"),
        req(erg, UIntOrNull, "exclusives reservation granule, bytes (null = not provided)"),
        req(cwg, UIntOrNull, "cache writeback granule, bytes (null = not provided)"),
        req(idc, Bool, "data clean to PoU not needed for instruction coherence"),
        req(dic, Bool, "instruction invalidation to PoU not needed for instruction coherence"),
        req(tmin_line, UIntOrNull, "smallest tag-cache line, bytes (FEAT_MTE2), null when not reported"),
    ],
) }

kind! {
    /// `dczid`: DCZID_EL0 decoded.
    DCZID, Dczid, DczidView = kernel(
    "dczid",
    "DCZID_EL0 decoded (cache suite).",
    [
        req(raw, Hex, "raw value"),
        req(bs, UInt, "BS field: log2 of the block in words"),
        req(block, UIntOrNull, "DC ZVA block, bytes (null when BS is reserved)"),
        req(dzp, Bool, "DC ZVA prohibited"),
    ],
) }

kind! {
    /// `setway`: one set/way walk, or the walks of one benchmark phase.
    SETWAY, Setway, SetwayView = kernel(
    "setway",
    "One set/way walk: the DC ISW/CSW/CISW instructions it executed. Every walk the kernel makes is recorded; inside a benchmark phase the walks of one op and scope are added up into one record with `walks` and `phase` when the phase ends.",
    [
        req(op, Str, "isw, csw or cisw"),
        req(scope, Str, "loc, louis or level1..level7"),
        req(ops, UInt, "DC instructions executed (0 when refused; the sum over `walks`)"),
        opt(error, Str, "why the walk was refused (then nothing was executed)"),
        opt(walks, UInt, "walks added up (absent: one)"),
        opt(phase, Str, "the benchmark phase they ran in (a metric's `phase`)"),
    ],
) }

kind! {
    /// `maint-total`: every maintenance instruction of the run, by operation.
    MAINT_TOTAL, MaintTotal, MaintTotalView = kernel(
    "maint-total",
    "Every DC, IC and TLBI instruction the kernel executed in the run, by operation, as its instruction wrappers counted them (the record before `end`). Field names are `cache::ops::MaintOp` names.",
    [
        req(dc_isw, UInt, "DC ISW (invalidate by set/way)"),
        req(dc_csw, UInt, "DC CSW (clean by set/way)"),
        req(dc_cisw, UInt, "DC CISW (clean and invalidate by set/way)"),
        req(dc_civac, UInt, "DC CIVAC (clean and invalidate by VA to PoC)"),
        req(dc_cvac, UInt, "DC CVAC (clean by VA to PoC)"),
        req(dc_ivac, UInt, "DC IVAC (invalidate by VA to PoC)"),
        req(dc_cvau, UInt, "DC CVAU (clean by VA to PoU)"),
        req(dc_zva, UInt, "DC ZVA (zero a DCZID block)"),
        req(ic_ivau, UInt, "IC IVAU (invalidate instruction cache by VA to PoU)"),
        req(ic_iallu, UInt, "IC IALLU (invalidate all instruction caches of this PE)"),
        req(ic_ialluis, UInt, "IC IALLUIS (… of the Inner Shareable domain)"),
        req(tlbi_vmalle1is, UInt, "TLBI VMALLE1IS"),
        req(tlbi_vaae1is, UInt, "TLBI VAAE1IS"),
        req(tlbi_other, UInt, "any other TLBI"),
        req(dc_other, UInt, "any other DC (CVAP, CVADP, MTE tag operations)"),
    ],
) }

kind! {
    /// `mmu`: the translation regime as programmed.
    MMU, Mmu, MmuView = kernel(
    "mmu",
    "The translation regime after the MMU is on (mmu suite).",
    [
        req(sctlr, Hex, "SCTLR_EL1"),
        req(tcr, Hex, "TCR_EL1"),
        req(mair, Hex, "MAIR_EL1"),
        req(ttbr0, Hex, "TTBR0_EL1"),
        req(va_bits, UInt, "virtual address bits"),
        req(tables, UInt, "translation tables allocated"),
    ],
) }

kind! {
    /// `attr`: one alias window's attributes as AT S1E1R reports them.
    ATTR, Attr, AttrView = kernel(
    "attr",
    "One alias window: its mapping and what AT S1E1R + PAR_EL1 report for it (mmu suite).",
    [
        req(name, Str, "attribute name: normal-wb, normal-wt, normal-nc, device-ngnrne, device-ngnre, device-gre, and the hint window as normal-wb-nwa, normal-wb-transient, normal-wt-transient"),
        req(va, Hex, "window start, VA"),
        req(pa, Hex, "window start, PA"),
        req(mair, Str, "the MAIR byte programmed, \"0x..\""),
        req(par_attr, StrOrNull, "PAR_EL1.ATTR after AT S1E1R, \"0x..\" (null when the walk failed)"),
        req(sh, StrOrNull, "PAR_EL1.SH: inner, outer, non (null when the walk failed)"),
    ],
) }

kind! {
    /// `metric`: one measurement.
    METRIC, Metric, MetricView = kernel(
    "metric",
    "One measurement: the statistics of its measured windows, its identity (bench, variant, attr, bytes, params) and the timer.",
    [
        req(bench, Str, "benchmark: latency, stream, handoff, kv"),
        req(variant, Str, "variant within the benchmark"),
        req(attr, Str, "memory attribute of the region"),
        req(bytes, UInt, "working set or transfer size, bytes"),
        req_since(2, params, Params, "the rest of the measurement's identity (e.g. tokens, stride); {} when none"),
        req_since(2, phase, Str, "the cache-model phase of its measured windows: bench/variant/attr/bytes[/name=value…]"),
        req(reps, UInt, "measured windows"),
        req(min, Num, "best window, in `unit`"),
        req(median, Num, "median window, in `unit`"),
        req(max, Num, "worst window, in `unit`"),
        req(mad, Num, "median absolute deviation, in `unit`"),
        req(unit, Str, "ns, cycles, ns/MiB, cycles/MiB, MB/s (10^6 B/s), B/cycle"),
        req(source, Str, "timer: cntvct (generic timer), pmccntr (cycle counter); model figures carry `model`"),
        req(emulated, Bool, "measured under an emulator: the figure measures the emulator"),
        opt(table_reads, UInt, "kv-paged: block-table entries a scan reads"),
        opt(lines, UInt, "kv-paged: cache lines a scan touches"),
        opt(pages, UInt, "kv-paged: 4 KiB pages a scan touches"),
        opt(pool_blocks, UInt, "kv-prefix: pool blocks in use"),
        opt(pool_bytes, UInt, "kv-prefix: pool bytes in use"),
        opt(cores, UInt, "cores the measurement ran on"),
        opt(dtype_bytes, UInt, "kv-quant: bytes per element"),
        opt(scan_bytes_per_block, UInt, "kv-quant: bytes a one-layer scan reads per block, scale included"),
        opt(cache_hits, UInt, "alloc-reuse: requests the caching allocator served from freed blocks"),
        opt(reserved, UInt, "alloc-reuse: bytes the caching allocator holds"),
        opt(handovers_per_op, UInt, "ping-pong: ownership hand-overs per operation (2: a round trip)"),
        opt(slowdown_permille, UInt, "false sharing: shared-line time over padded time, ‰"),
        opt(cwg, UInt, "false sharing: CTR_EL0.CWG padding, bytes"),
        opt(bytes_moved, UInt, "all-reduce: bytes moved per all-reduce"),
        opt(bytes_per_load, UInt, "stream: bytes one load instruction moves"),
        opt(line, UInt, "latency (schema 1 only; now in params): pointer-chase node size"),
        opt(prefetch_distance, UInt, "stream (schema 1 only; now in params)"),
        opt(tokens, UInt, "kv (schema 1 only; now in params)"),
        opt(cached, UInt, "kv (schema 1 only; now in params)"),
        opt(stride, UInt, "kv (schema 1 only; now in params)"),
        opt(wrapped, UInt, "kv (schema 1 only; now in params)"),
    ],
) }

/// The `pmu` record's `source` when the kernel counted on the core's PMU.
pub const PMU_SOURCE_PMU: &str = "pmu";

/// The `pmu` record's `source` in a synthetic board log (`cachescope-report synth-board-log`:
/// made from a model log, a test input, never silicon).
pub const PMU_SOURCE_SYNTHETIC: &str = "synthetic";

kind! {
    /// `pmu`: the PMU event counts of one phase's measured windows.
    PMU, Pmu, PmuView = kernel(
    "pmu",
    "The PMUv3 event counts of one phase's measured windows (`cachescope_arch::pmu`): every event of the catalogue the core advertises in PMCEID0/1, at most PMCR_EL0.N at a time, the groups multiplexed over contiguous shares of the repetitions; emitted when the phase ends, before its `metric`. Only where the PMU is usable at EL1.",
    [
        req(phase, Str, "the phase (a metric's `phase`)"),
        req(reps, UInt, "measured windows of the phase"),
        req(counters, UInt, "event counters (PMCR_EL0.N)"),
        req(events, UIntList, "event numbers counted (`cachescope_arch::pmu::PmuEvent`), in catalogue order"),
        req(counts, UIntList, "per event: its count summed over the windows it was counted in"),
        req(windows, UIntList, "per event: the windows it was counted in (its group's share of `reps`; 0: not counted, fewer windows than groups)"),
        req(source, Str, "`pmu` (the core's counters), or `synthetic` (made from a model log by `cachescope-report synth-board-log`: a test input, not silicon)"),
        req(emulated, Bool, "counted under an emulator: the counts are the emulator's"),
    ],
) }

kind! {
    /// `knee`: a step in a latency curve.
    KNEE, Knee, KneeView = kernel(
    "knee",
    "A step in a latency curve: an inferred capacity (on an emulator: the host's caches, not the guest's).",
    [
        req(attr, Str, "memory attribute of the curve"),
        req(capacity, UInt, "working set after which latency steps up, bytes"),
        req(below, Num, "latency before the step, in the curve's unit"),
        req(above, Num, "latency after the step"),
        req(source, Str, "timer of the curve"),
        req(emulated, Bool, "measured under an emulator"),
    ],
) }

kind! {
    /// `inferred`: a cache property inferred from a sweep on the timer.
    INFERRED, Inferred, InferredView = kernel(
    "inferred",
    "A cache property the bench suite's `infer` case inferred from a timer sweep (null under an emulator: the host infers it from the cache model's counts).",
    [
        req(property, Str, "`line` (bytes) or `ways`"),
        req(level, UInt, "cache level"),
        req(ccsidr, UInt, "what CCSIDR_EL1 says"),
        req(source, Str, "timer of the sweep"),
        req(value, UIntOrNull, "the inferred value; null when not inferred"),
        req(published, UIntOrNull, "the published silicon value; null when the core is not in the table"),
        req(emulated, Bool, "measured under an emulator"),
    ],
) }

kind! {
    /// `expect-hazard`: what the cache model's sanitizer must report for a deliberate mistake.
    EXPECT_HAZARD, ExpectHazard, ExpectHazardView = kernel(
    "expect-hazard",
    "A deliberate mistake's declaration (`Ctx::expect_hazard`): the sanitizer must report exactly this hazard kind at exactly these lines in this phase, and nothing else there (checked by `scripts/xtask hazards`).",
    [
        req(phase, Str, "the deliberate mistake's cache-model phase (`mistakes/CASE`, `mmu/probe-…`)"),
        req(kind, Str, "the hazard kind (see `hazard`)"),
        req(pa, Hex, "physical address of the first line"),
        req(lines, UInt, "lines, one hazard record each"),
        req(stride, UInt, "bytes from one line to the next"),
    ],
) }

kind! {
    /// `kv-shape`: the KV cache shape of a kv benchmark run.
    KV_SHAPE, KvShape, KvShapeView = kernel(
    "kv-shape",
    "The KV cache shape the kv benchmark runs with.",
    [
        req(layers, UInt, "transformer layers"),
        req(kv_heads, UInt, "KV heads per layer"),
        req(head_dim, UInt, "head dimension"),
        req(dtype_bytes, UInt, "bytes per element"),
        req(capacity, UInt, "ring capacity, tokens"),
        req(bytes_per_token, UInt, "2 × layers × kv_heads × head_dim × dtype_bytes"),
    ],
) }

kind! {
    /// `kv-layout`: one paged KV shape (dtype, block) of the deep-learning benchmarks.
    KV_LAYOUT, KvLayout, KvLayoutView = kernel(
    "kv-layout",
    "A paged KV cache shape a kv-quant (or kv-paged) run uses: the bytes-per-token formula's inputs and results. Dequantization is not modelled.",
    [
        req(bench, Str, "benchmark"),
        req(dtype, Str, "fp32, fp16, bf16, fp8, int8 (b1/b2/b4: the legacy numeric kv_dtype)"),
        req(dtype_bytes, UInt, "bytes per element"),
        req(block, UInt, "tokens per block"),
        req(layers, UInt, "transformer layers"),
        req(kv_heads, UInt, "KV heads per layer"),
        req(head_dim, UInt, "head dimension"),
        req(bytes_per_token, UInt, "2 × layers × kv_heads × head_dim × dtype_bytes (scales apart)"),
        req(scale_bytes, UInt, "scale bytes per block and layer (int8/fp8: one fp32 per head for K and for V; else 0)"),
        req(bytes_per_block, UInt, "bytes per block over every layer, scales included (÷ block: bytes per token with scales)"),
        req(scan_bytes_per_block, UInt, "bytes a one-layer scan reads per block, scale included (a cache of C bytes holds C × block ÷ this tokens)"),
    ],
) }

kind! {
    /// `alloc-trace`: the caching allocator after a seeded transformer-step trace.
    ALLOC_TRACE, AllocTrace, AllocTraceView = kernel(
    "alloc-trace",
    "The size-class caching allocator (alloc-reuse) after a seeded allocation/free trace shaped like transformer training steps, in the terms of torch.cuda.memory_stats().",
    [
        req(seed, UInt, "trace seed"),
        req(layers, UInt, "layers in the trace"),
        req(hidden, UInt, "bytes of one activation row"),
        req(steps, UInt, "training steps"),
        req(allocs, UInt, "requests served"),
        req(cache_hits, UInt, "requests served from a cached (freed) block"),
        req(peak_requested, UInt, "highest live requested bytes"),
        req(peak_allocated, UInt, "highest live bytes in size-class blocks"),
        req(allocated, UInt, "live bytes at the end (in use)"),
        req(reserved, UInt, "bytes taken from the arena (in use + cached), at the end"),
    ],
) }

kind! {
    /// `bench-model`: the cache-model speed benchmark's loop (tests/model.rs).
    BENCH_MODEL, BenchModel, BenchModelView = kernel(
    "bench-model",
    "One memory-bound loop of the cache-model speed benchmark (model test kernel, `only=bench`).",
    [
        req(pattern, Str, "seq or chase"),
        req(accesses, UInt, "loads executed"),
        req(bytes, UInt, "working set, bytes"),
        req(ticks, UInt, "generic-timer ticks of the loop"),
        req(cntfrq, UInt, "timer frequency, Hz"),
        req(ms, UInt, "loop time, ms (host time under TCG)"),
    ],
) }

kind! {
    /// `model-geometry`: one modelled cache.
    MODEL_GEOMETRY, ModelGeometry, ModelGeometryView = model(
    "model-geometry",
    "One cache the model simulates.",
    [
        req(level, Str, "L1I, L1D, L2, L3"),
        req(size, UInt, "bytes"),
        req(line, UInt, "line size, bytes"),
        req(sets, UInt, "sets"),
        req(ways, UInt, "ways"),
        req(sharing, Str, "private or shared"),
        req(policy, Str, "replacement policy: lru, fifo, random, plru when every level has it and nothing is inclusive; else the hierarchy's per-level spelling `L1I/L1D/L2/L3` with `+incl` on an inclusive level (e.g. `lru/lru/random+incl/lru`; [cache-model.md](cache-model.md))"),
        req(origin, Str, "where the geometry came from: `guest` (the kernel's CCSIDR markers), `cpu` (the guest CPU model's CCSIDR, known from its ID registers before the first instruction), `fallback` (an unknown CPU without markers: the rpi4 profile), `profile NAME`, or the plugin arguments (`+arguments` when they change one of those)"),
        req(vcpus, UInt, "vCPUs"),
        req(hit_cycles, UInt, "modelled load-to-use latency of a hit in this level, core cycles"),
        req(hit_ns, Num, "the same in ns at the profile's clock"),
        opt(index, Str, "L1I only, when the model indexes it virtually: `vipt` (VA bits above the 4 KiB page offset pick the set, the PA is the tag; absent: physically indexed)"),
        opt(va_index_bits, UInt, "with `index`: how many set-index bits come from the VA (0: the way fits a page, no alias can arise)"),
        opt(index_ref, Str, "with `index`: where the indexing comes from (the guest's CTR_EL0.L1Ip, a profile, or the plugin argument `l1i_index`)"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `model-ic-alias`: an IC IVAU on a VIPT L1I that left copies of its line at other indexes.
    MODEL_IC_ALIAS, ModelIcAlias, ModelIcAliasView = model(
    "model-ic-alias",
    "An IC IVAU the model applied to a virtually indexed L1I (`model-geometry.index` = `vipt`) that left copies of the same physical line valid at other indexes: the Arm ARM's VIPT rule (the invalidation reaches the entries whose virtual index and physical tag match its VA), cache-model rule 21. Emitted at the IVAU (at most 256 in a run; the rest are counted in a `model-warning`).",
    [
        req(phase, Str, "the phase the IVAU ran in (empty outside phases)"),
        req(phase_id, UInt, "its id (0 outside phases)"),
        req(cpu, UInt, "the issuing vCPU"),
        req(va, Hex, "the IVAU's VA (its L1I line)"),
        req(pa, Hex, "the line's physical address"),
        req(set, UInt, "the L1I set the VA indexes, whose copy was invalidated"),
        req(copies_before, UInt, "copies of the line in every vCPU's L1I before the IVAU"),
        req(copies_left, UInt, "copies still valid after it, at other indexes"),
        req(source, Str, "`model`"),
    ],
) }

level_counts!(kind! {
    /// `model`: one level's counts in one phase.
    MODEL, Model, ModelView = model(
    "model",
    "One cache level's counts during one named phase (a benchmark's measured windows).",
    [
        req(phase, Str, "phase name (a metric's `phase`)"),
        req(phase_id, UInt, "phase id"),
        req(level, Str, "L1I, L1D, L2, L3"),
    ] + LevelCounts::counts + [
        req(source, Str, "`model`"),
    ],
) });

level_counts!(kind! {
    /// `model-total`: one level's counts over the whole run.
    MODEL_TOTAL, ModelTotal, ModelTotalView = model(
    "model-total",
    "One cache level's counts over the whole run.",
    [
        req(level, Str, "L1I, L1D, L2, L3"),
    ] + LevelCounts::counts + [
        req(source, Str, "`model`"),
    ],
) });

coherence_counts!(kind! {
    /// `model-coherence`: one vCPU's coherence counts in one phase.
    MODEL_COHERENCE, ModelCoherence, ModelCoherenceView = model(
    "model-coherence",
    "One vCPU's coherence counts (MESI between the private caches, docs/cache-model.md) during one named phase; one per vCPU when the phase ends. Only with more than one vCPU.",
    [
        req(phase, Str, "phase name (a metric's `phase`)"),
        req(phase_id, UInt, "phase id"),
        req(cpu, UInt, "vCPU index"),
    ] + .. + [
        req(source, Str, "`model`"),
    ],
) });

coherence_counts!(kind! {
    /// `model-coherence-total`: one vCPU's coherence counts over the whole run.
    MODEL_COHERENCE_TOTAL, ModelCoherenceTotal, ModelCoherenceTotalView = model(
    "model-coherence-total",
    "One vCPU's coherence counts over the whole run (at exit, one per vCPU; only with more than one vCPU).",
    [
        req(cpu, UInt, "vCPU index"),
    ] + .. + [
        req(source, Str, "`model`"),
    ],
) });

kind! {
    /// `model-run`: the model's bookkeeping at exit.
    MODEL_RUN, ModelRun, ModelRunView = model(
    "model-run",
    "The model's bookkeeping at the end of the run.",
    [
        req(protocol, UInt, "marker protocol version the plugin speaks"),
        req(markers, UInt, "markers received"),
        opt(markers_ignored, UInt, "of those, ignored under the plugin argument `markers=declarations` (geometry, window, SCTLR); present only then"),
        req(phases, UInt, "phases completed"),
        req(va_learned, UInt, "by-VA operations translated from the guest's own accesses"),
        req(va_window, UInt, "… from a window's declared PA"),
        req(va_identity, UInt, "… as PA = VA with the MMU of the VA's regime off (the architecture)"),
        opt(va_walked, UInt, "… by a walk of the guest's own translation tables"),
        req(setway_ops, UInt, "DC set/way instructions decoded"),
        req(warnings, UInt, "model-warning records"),
        req(fast, Bool, "the shortcuts were on"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `model-warning`: something the model could not follow.
    MODEL_WARNING, ModelWarning, ModelWarningView = model(
    "model-warning",
    "Something the model could not follow (a malformed marker, a phase never ended).",
    [
        req(what, Str, "the problem"),
        opt(cause, Str, "what the warning is about, one word a check can allow (`cachescope-xtask observe --expect`'s `allow_warnings`): `untranslated-va` or `attribution` (`cachescope_arch::warning::WarningCause`)"),
        opt(count, UInt, "occurrences of this cause, when the warning stands for several"),
        opt(pc, Hex, "PC of the first instruction the warning is about, when the model knows it (`cachescope-xtask observe` symbolises it from an ELF)"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `model-pc`: one row of the per-PC miss and write-back table, at exit.
    MODEL_PC, ModelPc, ModelPcView = model(
    "model-pc",
    "At exit, the demand data accesses' L1D misses, L2 misses and L1D write-backs per PC of the load/store that caused them (what `cachescope-xtask observe` folds per function), most first; bounded: the PCs past the bound are summed in one last row (`rest`).",
    [
        req(pc, Hex, "PC of the load or store (0x0 in the `rest` row)"),
        req(pcs, UInt, "PCs in the row: 1, or how many the `rest` row sums"),
        req(rest, Bool, "the row sums every PC past the table's bound"),
        req(l1d_misses, UInt, "L1D misses of its accesses"),
        req(l2_misses, UInt, "L2 misses of its accesses (0 without an L2)"),
        req(writebacks, UInt, "dirty L1D lines its accesses' fills evicted (or wrote through)"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `model-profile`: the modelled core's latency table and hardware prefetcher, once per run.
    MODEL_PROFILE, ModelProfile, ModelProfileView = model(
    "model-profile",
    "The modelled core: clock, memory latency and hardware prefetcher, with their sources (once per run, before `model-geometry`).",
    [
        req(profile, Str, "guest, rpi4, rpi5, dsu2x4 or custom"),
        req(clock_mhz, UInt, "core clock the cycle figures refer to, MHz"),
        req(memory_cycles, UInt, "latency of an access served by memory (and of every access that bypasses the caches), cycles"),
        req(memory_ns, Num, "the same in ns"),
        req(hwpf, Str, "hardware data prefetcher: off, nextline, stride"),
        req(hwpf_distance, UInt, "lines (nextline) or strides (stride) ahead"),
        req(hwpf_degree, UInt, "prefetches per trigger"),
        req(latency_ref, Str, "where the latencies come from"),
        req(hwpf_ref, Str, "which published prefetcher the model approximates"),
        opt(policy_ref, Str, "where each level's replacement policy and inclusion come from (the TRM, or that it is an estimate); absent in logs written before it existed"),
        opt(implementation, Str, "`arch` (the architecture's rules) or `silicon` (the profile's core's documented deviations applied; `impl=`); absent in logs written before it existed"),
        opt(deviations, Str, "silicon mode: the deviations applied, comma-separated (ivac-as-civac, isw-cleans, wt-as-nc, write-streaming=N), empty when the core's TRM gives none; `none` in arch mode"),
        opt(deviations_ref, Str, "where the deviations come from (TRM sections; which figures are estimates)"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `model-topology`: the modelled clusters and hand-over costs.
    MODEL_TOPOLOGY, ModelTopology, ModelTopologyView = model(
    "model-topology",
    "The modelled topology: clusters of cores (vCPU i in cluster i / cores_per_cluster, QEMU's -smp N,clusters=C,cores=K order), what a cluster shares, what joins the clusters, and what one line hand-over between two cores costs (once per run, after `model-profile`).",
    [
        req(clusters, UInt, "clusters"),
        req(cores_per_cluster, UInt, "cores in each cluster"),
        req(cluster_cache, Str, "what a cluster shares: shared-l2-inclusive or dsu-l3-snoop-filter"),
        req(interconnect, Str, "what joins the clusters: none or cmn-hnf-slc"),
        opt(handover_in_cycles, UInt, "cycles of a demand access served by a dirty copy in the same cluster (absent: the serving level's hit latency)"),
        opt(handover_cross_cycles, UInt, "the same from another cluster (absent: the serving level's hit latency)"),
        req(handover_ref, Str, "where the hand-over costs come from, or that they are estimates"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `model-tlb`: the modelled TLBs and the cost of a miss, once per run.
    MODEL_TLB, ModelTlb, ModelTlbView = model(
    "model-tlb",
    "The modelled TLBs of each vCPU (L1 instruction, L1 data, unified L2: entries, associativity, the page sizes each stores) and what a data access's translation costs beyond the cache latency (once per run, after `model-profile`; only when the profile models TLBs).",
    [
        req(l1i, Str, "L1 instruction TLB: entries, associativity, page sizes"),
        req(l1d, Str, "L1 data TLB: the same"),
        req(l2, Str, "unified L2 TLB: the same"),
        req(l2_hit_cycles, UInt, "cycles of a data access whose translation missed the L1 data TLB and hit the L2 TLB"),
        req(walk_level_cycles, UInt, "cycles per descriptor read of a table walk (an L2 TLB miss)"),
        req(tlb_ref, Str, "where the TLB figures come from, and which are estimates"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `tlb`: a phase's TLB lookups.
    TLB, Tlb, TlbView = model(
    "tlb",
    "A phase's TLB lookups by level (only when the profile models TLBs): a data access looks up once per L1D line it touches, an instruction fetch once per L1I line the model counts; nothing is looked up with the MMU off. Misses of an L1 TLB look up the L2 TLB; its misses are table walks.",
    [
        req(phase, Str, "phase name"),
        req(phase_id, UInt, "phase id"),
        req(l1i_hits, UInt, "L1 instruction TLB hits"),
        req(l1i_misses, UInt, "L1 instruction TLB misses"),
        req(l1d_hits, UInt, "L1 data TLB hits"),
        req(l1d_misses, UInt, "L1 data TLB misses"),
        req(l2_hits, UInt, "L2 TLB hits (instruction and data)"),
        req(l2_misses, UInt, "L2 TLB misses: table walks (instruction and data)"),
        req(data_walks, UInt, "of the walks, those of data accesses"),
        req(walk_levels, UInt, "descriptor reads of the data accesses' walks"),
        req(cycles, UInt, "modelled cycles the data accesses' translations added to `model-time` (L2 TLB hits and walks)"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `model-time`: a phase's modelled time.
    MODEL_TIME, ModelTime, ModelTimeView = model(
    "model-time",
    "A phase's modelled data-access time: each demand data access costs the latency of the level that served it, plus its translation's cost beyond the L1 data TLB where the profile models TLBs (the phase's `tlb` record), without overlap (an upper bound for streaming code).",
    [
        req(phase, Str, "phase name"),
        req(phase_id, UInt, "phase id"),
        req(data_accesses, UInt, "demand data accesses, per L1D line touched, including bypassing ones"),
        req(cycles, UInt, "modelled cycles"),
        req(ns, Num, "modelled ns at the profile's clock"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `hazard`: a cache-maintenance mistake the model's sanitizer saw.
    HAZARD, Hazard, HazardView = model(
    "hazard",
    "A cache-maintenance hazard, deduplicated per (kind, line, phase): emitted when the phase ends (at exit outside phases).",
    [
        req(kind, Str, "stale-read-by-device, lost-write, stale-read-by-cpu, stale-instruction, maintenance-gap, non-shareable-shared; shared-line (advisory: a reader bypassing a cache shares the line with a writer, without reading the written bytes; listed, never fails a phase that did not declare it)"),
        req(pa, Hex, "physical address of the line"),
        req(va, Hex, "virtual address of the first exposing access"),
        req(pc, Hex, "PC of the first exposing access"),
        req(phase, Str, "phase name (empty outside phases)"),
        req(phase_id, UInt, "phase id (0 outside phases)"),
        req(count, UInt, "occurrences in this phase"),
        req(access, Str, "the exposing access: nc-read, device-read, dc-ivac, dc-isw, read, write, fetch, maint-end"),
        req(cause, Str, "the earlier access that made the line hazardous (`cachescope_arch::hazard::HazardCause`): write, nc-write, device-write, write-behind, write-without-ic-invalidate, dc-by-va, non-shareable-copy, copy-elsewhere or write-ivau-other-alias"),
        req(cause_pc, Hex, "PC of that access (0x0 when not known)"),
        opt(stale, Hex, "the value the exposing access would see on silicon, when known"),
        opt(current, Hex, "the value the emulator returned or holds, when known"),
        opt(masked_by, Str, "silicon mode only (`impl=silicon`): the core's documented deviation that hides this mistake on that core (no data lost there), while the hazard stays an architectural mistake: ivac-as-civac, isw-cleans, wt-as-nc, write-streaming"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `hazard-total`: the sanitizer's whole-run summary.
    HAZARD_TOTAL, HazardTotal, HazardTotalView = model(
    "hazard-total",
    "The sanitizer's summary at exit: hazard records per kind (distinct (kind, line, phase)), all occurrences, and whether the bound on hazard records cut the list short.",
    [
        req(sanitize, Bool, "the sanitizer ran"),
        req(hazards, UInt, "hazard records"),
        req(count, UInt, "occurrences"),
        req(stale_read_by_device, UInt, "hazard records of this kind"),
        req(lost_write, UInt, "…"),
        req(stale_read_by_cpu, UInt, "…"),
        req(stale_instruction, UInt, "…"),
        req(maintenance_gap, UInt, "…"),
        opt(shared_line, UInt, "… (advisory; absent in model logs written before the kind existed)"),
        opt(non_shareable_shared, UInt, "… (absent in model logs written before the kind existed)"),
        req(truncated, Bool,
            "more distinct hazards than the plugin records in a run (10,000): the rest were only counted (`dropped`); the run fails",
        ),
        req(dropped, UInt, "occurrences of hazards not recorded because of that bound (0 when not truncated)"),
        req(source, Str, "`model`"),
    ],
) }

kind! {
    /// `sanitizer-finding`: a phase that failed the sanitizer's verdict.
    SANITIZER_FINDING, SanitizerFinding, SanitizerFindingView = runner(
    "sanitizer-finding",
    "A phase that failed the sanitizer's verdict (a declared hazard not seen exactly, or a hazard in a phase that declared none), judged by the runner after QEMU exits; at most 20 per run.",
    [
        req(phase, Str, "the phase (empty: outside any phase)"),
        req(case, Str, "the KTAP case that declared the phase (`suite.case`), empty when none did"),
        req(declared, Bool, "whether the phase declared a deliberate mistake (`expect-hazard`)"),
        req(what, Str, "what was declared, missing and unexpected, as kind@line"),
        req(source, Str, "`runner`"),
    ],
) }

kind! {
    /// `sanitizer-verdict`: the sanitizer's verdict on the run, folded into its exit status.
    SANITIZER_VERDICT, SanitizerVerdict, SanitizerVerdictView = runner(
    "sanitizer-verdict",
    "The cache-model sanitizer's verdict on the run (`cachescope-report verdict`), appended by the runner after QEMU exits: a failed verdict makes a passing run exit 1.",
    [
        req(verdict, Str, "as-declared (every declared hazard exactly, none elsewhere), failed, or off (sanitize=off)"),
        req(declared_phases, UInt, "phases that declared a deliberate mistake"),
        req(failed_phases, UInt, "phases that failed"),
        req(first, Str, "the first failure, `phase: what` (empty when none)"),
        req(source, Str, "`runner`"),
    ],
) }

#[cfg(feature = "alloc")]
impl MaintTotal {
    /// Every operation's count, indexed by [`MaintOp::index`](crate::cache::ops::MaintOp::index)
    /// (the fields are the operations' names, in [`MaintOp::ALL`](crate::cache::ops::MaintOp::ALL)
    /// order: a test keeps them so, and debug builds check each record).
    pub fn ops(mut self, counts: &[u64; crate::cache::ops::MaintOp::COUNT]) -> Self {
        for op in crate::cache::ops::MaintOp::ALL {
            self.rec = self.rec.u64(op.name(), counts[op.index()]);
        }
        self
    }
}

#[cfg(feature = "alloc")]
impl HazardTotal {
    /// The hazard records of each kind, indexed by `HazardKind as usize` (the fields are the
    /// kinds' [`total_field`](crate::hazard::HazardKind::total_field) names, in order).
    pub fn per_kind(mut self, counts: &[u64; crate::hazard::HazardKind::ALL.len()]) -> Self {
        for k in crate::hazard::HazardKind::ALL {
            self.rec = self.rec.u64(k.total_field(), counts[k as usize]);
        }
        self
    }
}

impl<O: view::Object + ?Sized> MaintTotalView<'_, O> {
    /// Every operation's count, indexed by [`MaintOp::index`](crate::cache::ops::MaintOp::index)
    /// (`None`: absent).
    pub fn ops(&self) -> [Option<u64>; crate::cache::ops::MaintOp::COUNT] {
        crate::cache::ops::MaintOp::ALL.map(|op| self.obj.uint(op.name()))
    }
}

impl<O: view::Object + ?Sized> HazardTotalView<'_, O> {
    /// The hazard records of each kind, indexed by `HazardKind as usize` (`None`: absent).
    pub fn per_kind(&self) -> [Option<u64>; crate::hazard::HazardKind::ALL.len()] {
        crate::hazard::HazardKind::ALL.map(|k| self.obj.uint(k.total_field()))
    }
}

/// Every record kind, kernel first.
pub const KINDS: &[RecordKind] = &[
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
    PMU,
    KNEE,
    INFERRED,
    EXPECT_HAZARD,
    KV_SHAPE,
    KV_LAYOUT,
    ALLOC_TRACE,
    BENCH_MODEL,
    MODEL_PROFILE,
    MODEL_TOPOLOGY,
    MODEL_GEOMETRY,
    MODEL,
    MODEL_TIME,
    MODEL_TLB,
    TLB,
    MODEL_TOTAL,
    MODEL_COHERENCE,
    MODEL_COHERENCE_TOTAL,
    MODEL_RUN,
    MODEL_WARNING,
    MODEL_PC,
    MODEL_IC_ALIAS,
    HAZARD,
    HAZARD_TOTAL,
    SANITIZER_FINDING,
    SANITIZER_VERDICT,
];

/// The declaration of record kind `name`.
pub fn kind(name: &str) -> Option<&'static RecordKind> {
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
            assert!(k.fields.len() <= 64, "{}: the emitter's check keeps a 64-bit set of fields", k.name);
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

    /// A builder writes exactly what the untyped writer writes for the same fields: every type,
    /// escaping, fixed decimals, null.
    #[test]
    fn builders_write_the_wire_format() {
        let typed = Boot::new()
            .schema(2)
            .el(2)
            .current_el(1)
            .board("qemu-virt")
            .midr(0x410f_d083)
            .cpu("a \"q\"\n\t\\\u{1}")
            .cntfrq(62_500_000)
            .dtb(true)
            .ram_base(0x4000_0000)
            .ram_size(1 << 29)
            .uart(0x900_0000)
            .emulated(false)
            .args("")
            .cores(4);
        let untyped = Record::new(&BOOT)
            .u64("schema", 2)
            .u64("el", 2)
            .u64("current_el", 1)
            .str("board", "qemu-virt")
            .hex("midr", 0x410f_d083)
            .str("cpu", "a \"q\"\n\t\\\u{1}")
            .u64("cntfrq", 62_500_000)
            .bool("dtb", true)
            .hex("ram_base", 0x4000_0000)
            .u64("ram_size", 1 << 29)
            .hex("uart", 0x900_0000)
            .bool("emulated", false)
            .str("args", "")
            .u64("cores", 4)
            .finish();
        assert_eq!(typed.finish(), untyped);
        assert_eq!(
            untyped,
            r#"{"record":"boot","schema":2,"el":2,"current_el":1,"board":"qemu-virt","midr":"0x410fd083","cpu":"a \"q\"\n\t\\\u0001","cntfrq":62500000,"dtb":true,"ram_base":"0x40000000","ram_size":536870912,"uart":"0x9000000","emulated":false,"args":"","cores":4}"#
        );
        let m = Metric::new()
            .bench("kv")
            .variant("scan")
            .attr("normal-wb")
            .bytes(4096)
            .params(&[("tokens", 512), ("stride", 80)])
            .phase("kv/scan/normal-wb/4096/tokens=512/stride=80")
            .reps(9)
            .min(1.23456, 2)
            .median(f64::NAN, 3)
            .max(f64::INFINITY, 1)
            .mad(0.0, 0)
            .unit("ns")
            .source("cntvct")
            .emulated(true)
            .lines(7);
        assert_eq!(
            m.finish(),
            r#"{"record":"metric","bench":"kv","variant":"scan","attr":"normal-wb","bytes":4096,"params":{"tokens":512,"stride":80},"phase":"kv/scan/normal-wb/4096/tokens=512/stride=80","reps":9,"min":1.23,"median":null,"max":null,"mad":0,"unit":"ns","source":"cntvct","emulated":true,"lines":7}"#
        );
        let c = Clidr::new().raw(0xa200023).ctype(&[3, 4, 0]).levels(2).louu(1).louis(1).loc(2).icb(0).ccsidr_format("32bit");
        assert_eq!(
            c.finish(),
            r#"{"record":"clidr","raw":"0xa200023","ctype":[3,4,0],"levels":2,"louu":1,"louis":1,"loc":2,"icb":0,"ccsidr_format":"32bit"}"#
        );
        let mut empty = String::new();
        Value::Params(&[]).push(&mut empty);
        Value::UIntList(&[]).push(&mut empty);
        assert_eq!(empty, "{}[]");
    }

    /// `None` of a nullable field is `null`; `type` is a key; the enum-keyed setters follow
    /// their enums.
    #[test]
    fn builders_of_special_fields() {
        let ctr = Ctr::new()
            .raw(0x8444c004)
            .imin_line(64)
            .dmin_line(64)
            .l1ip("PIPT")
            .erg(Some(64))
            .cwg(None)
            .idc(false)
            .dic(true)
            .tmin_line(None);
        assert_eq!(
            ctr.finish(),
            r#"{"record":"ctr","raw":"0x8444c004","imin_line":64,"dmin_line":64,"l1ip":"PIPT","erg":64,"cwg":null,"idc":false,"dic":true,"tmin_line":null}"#
        );
        let cache = Cache::new().level(1).r#type("data").line(64).ways(2).sets(256).size(32768).source("ccsidr").finish();
        assert!(cache.starts_with(r#"{"record":"cache","level":1,"type":"data","#), "{cache}");
        let total = MaintTotal::new().ops(&core::array::from_fn(|i| i as u64)).finish();
        assert!(total.starts_with(r#"{"record":"maint-total","dc_isw":0,"dc_csw":1,"#) && total.ends_with(r#""dc_other":14}"#), "{total}");
        let h = HazardTotal::new()
            .sanitize(true)
            .hazards(15)
            .count(20)
            .per_kind(&[5, 4, 3, 2, 1, 0, 6])
            .truncated(false)
            .dropped(0)
            .source("model");
        assert!(h.finish().contains(
            r#""stale_read_by_device":5,"lost_write":4,"stale_read_by_cpu":3,"stale_instruction":2,"maintenance_gap":1,"shared_line":0,"non_shareable_shared":6,"#
        ));
    }

    /// The counts group is the `model` kinds' fields, in order, and the builders' and views'
    /// `counts` carry all of them.
    #[test]
    fn level_counts_are_the_model_fields() {
        let c = LevelCounts { accesses: 8, hits: 7, misses: 1, writebacks: 2, maint: 3, bypass: 4, prefetches: 5, prefetch_hits: 6 };
        let line = ModelTotal::new().level("L1D").counts(&c).source("model").finish();
        assert_eq!(
            line,
            r#"{"record":"model-total","level":"L1D","accesses":8,"hits":7,"misses":1,"writebacks":2,"maint":3,"bypass":4,"prefetches":5,"prefetch_hits":6,"source":"model"}"#
        );
        let names = |k: &RecordKind| k.fields.iter().map(|f| f.name).collect::<std::vec::Vec<_>>();
        assert_eq!(names(&MODEL)[3..], names(&MODEL_TOTAL)[1..]);
        assert_eq!(c + c - c, c);
        let obj = Obj::parse(&line);
        assert_eq!(ModelTotalView::of(&obj).unwrap().counts(), c);
    }

    #[test]
    #[should_panic(expected = "a `end` record without its required field `failed`")]
    fn a_missing_required_field_panics() {
        let _ = End::new().passed(1).skipped(0).finish();
    }

    #[test]
    #[should_panic(expected = "a `end` record has a field out of declaration order")]
    fn a_field_out_of_order_panics() {
        let _ = End::new().failed(0).passed(1).skipped(0).finish();
    }

    /// What the debug check accepts and refuses, on text (strings holding commas, colons,
    /// braces and escaped quotes do not confuse it).
    #[test]
    fn the_check_reads_keys_only() {
        let ok = r#"{"record":"setway","op":"c,\"sw\":{","scope":"loc","ops":12,"error":"x"}"#;
        assert_eq!(check(&SETWAY, ok), Ok(()));
        assert_eq!(check(&SETWAY, r#"{"record":"setway","op":"cisw","ops":12}"#), Err(Broken::Missing("scope")));
        assert_eq!(check(&SETWAY, r#"{"record":"setway","op":"cisw","scope":"loc"}"#), Err(Broken::Missing("ops")));
        assert!(matches!(check(&SETWAY, r#"{"record":"setway","scope":"loc","op":"cisw","ops":1}"#), Err(Broken::OutOfOrder(_))));
        assert!(matches!(check(&SETWAY, r#"{"record":"setway","op":"cisw","scope":"loc","ops":1,"bogus":1}"#), Err(Broken::OutOfOrder(_))));
        let m = r#"{"record":"metric","bench":"b","variant":"v","attr":"a","bytes":1,"params":{"z":1,"a":2},"phase":"p","reps":1,"min":1,"median":1,"max":1,"mad":0,"unit":"ns","source":"cntvct","emulated":true}"#;
        assert_eq!(check(&METRIC, m), Ok(()), "params' own keys are not fields");
    }

    #[test]
    fn optional_fields_may_be_absent() {
        let r = Setway::new().op("cisw").scope("loc").ops(12);
        assert_eq!(r.finish(), r#"{"record":"setway","op":"cisw","scope":"loc","ops":12}"#);
    }

    /// A flat JSON object for the view tests: `"key":value` pairs, values kept as text.
    struct Obj(std::vec::Vec<(std::string::String, std::string::String)>);

    impl Obj {
        /// Splits a record this module wrote (no nested commas but in `[…]`/`{…}`).
        fn parse(json: &str) -> Obj {
            let body = &json[1..json.len() - 1];
            let (mut out, mut depth, mut start, mut quoted) = (std::vec::Vec::new(), 0, 0, false);
            for (i, c) in body.char_indices().chain([(body.len(), ',')]) {
                match c {
                    '"' => quoted = !quoted,
                    '[' | '{' if !quoted => depth += 1,
                    ']' | '}' if !quoted => depth -= 1,
                    ',' if !quoted && depth == 0 => {
                        let (k, v) = body[start..i].split_once(':').unwrap();
                        out.push((k.trim_matches('"').into(), v.into()));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            Obj(out)
        }

        fn get(&self, key: &str) -> Option<&str> {
            self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
        }
    }

    impl Object for Obj {
        type List = str;
        type Map = str;
        fn str(&self, key: &str) -> Option<&str> {
            self.get(key)?.strip_prefix('"')?.strip_suffix('"')
        }
        fn uint(&self, key: &str) -> Option<u64> {
            self.get(key)?.parse().ok()
        }
        fn num(&self, key: &str) -> Option<f64> {
            self.get(key)?.parse().ok()
        }
        fn hex(&self, key: &str) -> Option<u64> {
            u64::from_str_radix(self.str(key)?.strip_prefix("0x")?, 16).ok()
        }
        fn bool(&self, key: &str) -> Option<bool> {
            self.get(key)?.parse().ok()
        }
        fn list(&self, key: &str) -> Option<&str> {
            self.get(key).filter(|v| v.starts_with('['))
        }
        fn map(&self, key: &str) -> Option<&str> {
            self.get(key).filter(|v| v.starts_with('{'))
        }
    }

    #[test]
    fn views_read_declared_fields_by_type() {
        let line = Ctr::new()
            .raw(0x8444c004)
            .imin_line(64)
            .dmin_line(64)
            .l1ip("PIPT")
            .erg(Some(64))
            .cwg(None)
            .idc(false)
            .dic(true)
            .tmin_line(None)
            .finish();
        let obj = Obj::parse(&line);
        let v = CtrView::of(&obj).unwrap();
        assert_eq!(
            (v.raw(), v.imin_line(), v.l1ip(), v.erg(), v.cwg(), v.idc(), v.dic()),
            (Some(0x8444c004), Some(64), Some("PIPT"), Some(64), None, Some(false), Some(true))
        );
        assert!(EndView::of(&obj).is_none(), "a view is only of its own kind");
        let m = Obj::parse(r#"{"record":"metric","bench":"b","params":{"t":1},"median":2.5}"#);
        let mv = <MetricView<'_, Obj> as View<'_, Obj>>::of(&m).unwrap();
        assert_eq!((mv.bench(), mv.median(), mv.params(), mv.min()), (Some("b"), Some(2.5), Some(r#"{"t":1}"#), None));
        let c = Obj::parse(&Clidr::new().raw(1).ctype(&[1, 2]).levels(1).louu(1).louis(1).loc(1).icb(0).ccsidr_format("32bit").finish());
        assert_eq!(ClidrView::of(&c).unwrap().ctype(), Some("[1,2]"));
        assert_eq!(CacheView::of(&Obj::parse(r#"{"record":"cache","type":"data"}"#)).unwrap().r#type(), Some("data"));
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
