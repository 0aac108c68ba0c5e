//! The benchmark identities: every benchmark of the `bench` suite ([`Bench`], [`Variant`]) and
//! of the multicore `smp` suite ([`SmpBench`], [`SmpVariant`]), every variant it measures and the
//! parameters that tell its measurements apart ([`Param`]). The kernel names its `metric` records
//! and cache-model phases with these (`MetricId`'s `bench`, `variant` and `params`); the report
//! tool matches on the same enums, so a variant the kernel does not declare does not compile on
//! the host. Each wire name is written once, here. Pure.
//!
//! ```
//! use cachescope_arch::bench::{Bench, Variant};
//! assert_eq!(Bench::KvPaged.name(), "kv-paged");
//! assert_eq!(Variant::from_name("scan-paged"), Some(Variant::ScanPaged));
//! assert_eq!(Variant::ScanPaged.bench(), Bench::KvPaged);
//! ```

/// Declares a benchmark enum and its variant enum from one table: each benchmark with its wire
/// name and its variants with theirs.
macro_rules! identities {
    (
        $(#[$bdoc:meta])* $B:ident, $(#[$vdoc:meta])* $V:ident;
        $( $(#[$bm:meta])* $bench:ident = $bname:literal { $( $(#[$vm:meta])* $var:ident = $vname:literal, )* } )*
    ) => {
        $(#[$bdoc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $B {
            $( $(#[$bm])* $bench, )*
        }

        $(#[$vdoc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $V {
            $( $( $(#[$vm])* $var, )* )*
        }

        impl $B {
            /// Every benchmark, in the suite's order.
            pub const ALL: &'static [$B] = &[$(Self::$bench),*];

            /// The wire name (`bench` field).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$bench => $bname,)*
                }
            }

            /// The variants this benchmark measures, in the order it runs them.
            pub const fn variants(self) -> &'static [$V] {
                match self {
                    $(Self::$bench => &[$($V::$var),*],)*
                }
            }

            /// The benchmark a wire name names.
            pub fn from_name(name: &str) -> Option<$B> {
                Self::ALL.iter().copied().find(|b| b.name() == name)
            }
        }

        impl $V {
            /// Every variant, benchmark by benchmark.
            pub const ALL: &'static [$V] = &[$($(Self::$var,)*)*];

            /// The wire name (`variant` field).
            pub const fn name(self) -> &'static str {
                match self {
                    $($(Self::$var => $vname,)*)*
                }
            }

            /// The benchmark that measures it.
            pub const fn bench(self) -> $B {
                match self {
                    $($(Self::$var => $B::$bench,)*)*
                }
            }

            /// The variant a wire name names.
            pub fn from_name(name: &str) -> Option<$V> {
                Self::ALL.iter().copied().find(|v| v.name() == name)
            }

            /// The variant of `bench` named `name`.
            pub fn of(bench: $B, name: &str) -> Option<$V> {
                bench.variants().iter().copied().find(|v| v.name() == name)
            }
        }

        impl core::fmt::Display for $B {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl core::fmt::Display for $V {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

identities! {
    /// A benchmark of the `bench` suite: its KTAP case and the `bench` field of its records.
    Bench,
    /// What one benchmark measures (the `variant` field of its records and the second part of
    /// its phase names). Every variant belongs to one benchmark ([`Variant::bench`]).
    Variant;
    /// Pointer-chase latency against the working-set size.
    Latency = "latency" {
        /// The randomised pointer chase, one line per load.
        Chase = "chase",
    }
    /// Streaming reads, writes and copies, with and without PRFM.
    Stream = "stream" {
        /// LDP reads.
        ReadLdp = "read-ldp",
        /// LDNP (non-temporal) reads.
        ReadLdnp = "read-ldnp",
        /// LDP reads with PRFM PLDL1STRM ahead.
        ReadLdpPldl1strm = "read-ldp-pldl1strm",
        /// LDP reads with PRFM PLDL2KEEP ahead.
        ReadLdpPldl2keep = "read-ldp-pldl2keep",
        /// STP writes.
        WriteStp = "write-stp",
        /// STNP (non-temporal) writes.
        WriteStnp = "write-stnp",
        /// LDP/STP copy of the first half to the second.
        CopyLdpStp = "copy-ldp-stp",
    }
    /// DMA-like hand-off of a buffer to and from a non-coherent device, per method.
    Handoff = "handoff" {
        /// CPU to device through the non-cacheable alias.
        ToDeviceNc = "to-device-nc",
        /// Device to CPU through the non-cacheable alias.
        FromDeviceNc = "from-device-nc",
        /// CPU to device, write-back alias with by-VA maintenance.
        ToDeviceVaMaint = "to-device-va-maint",
        /// Device to CPU, write-back alias with by-VA maintenance.
        FromDeviceVaMaint = "from-device-va-maint",
        /// CPU to device, write-back alias with a set/way flush.
        ToDeviceSetway = "to-device-setway",
        /// Device to CPU, write-back alias with a set/way flush.
        FromDeviceSetway = "from-device-setway",
        /// CPU to device through a Device alias.
        ToDeviceDevice = "to-device-device",
        /// Device to CPU through a Device alias.
        FromDeviceDevice = "from-device-device",
    }
    /// A ring-buffer KV cache: append one token, scan the cached ones.
    Kv = "kv" {
        /// Append with line-aligned records.
        AppendAligned = "append-aligned",
        /// Scan with line-aligned records.
        ScanAligned = "scan-aligned",
        /// Append with packed (misaligned) records.
        AppendMisaligned = "append-misaligned",
        /// Scan with packed (misaligned) records.
        ScanMisaligned = "scan-misaligned",
    }
    /// Paged KV (PagedAttention) against the contiguous layout at equal bytes.
    KvPaged = "kv-paged" {
        /// Append to the contiguous layout.
        AppendContiguous = "append-contiguous",
        /// Scan of the contiguous layout.
        ScanContiguous = "scan-contiguous",
        /// Append through the block table.
        AppendPaged = "append-paged",
        /// Scan through the block table.
        ScanPaged = "scan-paged",
    }
    /// KV quantization: one layer's scan per element type.
    KvQuant = "kv-quant" {
        /// fp32 elements.
        ScanFp32 = "scan-fp32",
        /// fp16 elements.
        ScanFp16 = "scan-fp16",
        /// bf16 elements (laid out as fp16).
        ScanBf16 = "scan-bf16",
        /// fp8 elements with per-block scales (laid out as int8).
        ScanFp8 = "scan-fp8",
        /// int8 elements with per-block scales.
        ScanInt8 = "scan-int8",
    }
    /// Prefix sharing across sequences.
    KvPrefix = "kv-prefix" {
        /// One shared copy of the prefix.
        Shared = "shared",
        /// A private copy per sequence.
        Private = "private",
    }
    /// The caching allocator: the just-freed block against fresh memory.
    AllocReuse = "alloc-reuse" {
        /// The block the allocator just took back.
        Reuse = "reuse",
        /// Memory the caches have not seen.
        Fresh = "fresh",
    }
    /// A DataLoader with prefetch_factor=2: double buffering across two cores.
    StreamDouble = "stream-double" {
        /// One core, no prefetch.
        None = "none",
        /// One core, PRFM ahead.
        Prfm = "prfm",
        /// Two cores: one fills while the other consumes.
        Double = "double",
    }
    /// Geometry inference: line size and associativity from sweeps.
    Infer = "infer" {
        /// The stride sweep (line size).
        Line = "line",
        /// The conflict sweep of one level (ways).
        Ways = "ways",
    }
    /// Checkpoint pollution (seed pitfall 5.5): a hot working set of L2 size scanned between
    /// large streaming writes, per way of writing them.
    Checkpoint = "checkpoint" {
        /// Scans with no write between them: what the hot set misses by itself.
        NoWrite = "no-write",
        /// Plain STP writes through the write-back window.
        PlainStp = "plain-stp",
        /// STNP (non-temporal) writes through the write-back window.
        Stnp = "stnp",
        /// STP writes through the write-back transient window (MAIR 0x77).
        TransientWindow = "transient-window",
        /// STP writes through the write-back no-write-allocate window (MAIR 0xee).
        NwaWindow = "nwa-window",
        /// STP writes, each chunk cleaned and invalidated to PoC by VA (DC CIVAC) once written:
        /// "drop the write cache".
        DcCivac = "dc-civac",
    }
}

identities! {
    /// A benchmark of the multicore (`smp`) suite: the `bench` field of its records (its KTAP
    /// cases are named apart, `src/suites/smp.rs`).
    SmpBench,
    /// What one multicore benchmark measures (the `variant` field of its records). Every
    /// variant belongs to one benchmark ([`SmpVariant::bench`]).
    SmpVariant;
    /// A line handed back and forth between two cores.
    Pingpong = "pingpong" {
        /// A plain store (STR).
        Plain = "plain",
        /// LDXR / STXR, retried until the store-exclusive succeeds.
        LdxrStxr = "ldxr-stxr",
        /// LDADD (FEAT_LSE), one far atomic.
        Ldadd = "ldadd",
    }
    /// Per-core counters in one line against counters padded apart.
    Falseshare = "falseshare" {
        /// Every counter in one line.
        SharedLine = "shared-line",
        /// Counters one cache writeback granule apart.
        PaddedCwg = "padded-cwg",
    }
    /// A single-producer single-consumer ring, per fence and index layout.
    Spsc = "spsc" {
        /// DMB ISH; head and tail in one line.
        DmbIshShared = "dmb-ish-shared",
        /// DMB ISH; head and tail a granule apart.
        DmbIshSeparate = "dmb-ish-separate",
        /// DSB SY; head and tail in one line.
        DsbSyShared = "dsb-sy-shared",
        /// DSB SY; head and tail a granule apart.
        DsbSySeparate = "dsb-sy-separate",
    }
    /// A ring all-reduce over the cores.
    Allreduce = "allreduce" {
        /// Reduce-scatter then all-gather around the ring.
        Ring = "ring",
    }
    /// Core-to-core latency: for every ordered pair of cores, a line handed back and forth
    /// (the first core of the pair writes first).
    C2c = "c2c" {
        /// Plain loads and stores of one line (each round trip two one-way hand-overs).
        LineHandover = "line-handover",
    }
    /// Broadcast maintenance: DC CIVAC on lines another core holds, TLBI and IC, Inner
    /// Shareable against local.
    Bcast = "bcast" {
        /// The barrier hand-shake alone (what the DC windows take out).
        Handshake = "handshake",
        /// DC CIVAC on lines the other core wrote.
        DcCivacRemote = "dc-civac-remote",
        /// Stores to own lines (what the local DC window takes out).
        StoreLocal = "store-local",
        /// DC CIVAC on own dirty lines.
        DcCivacLocal = "dc-civac-local",
        /// TLBI VAE1IS, broadcast.
        TlbiVae1is = "tlbi-vae1is",
        /// TLBI VAE1, local.
        TlbiVae1 = "tlbi-vae1",
        /// IC IALLUIS, broadcast.
        IcIalluis = "ic-ialluis",
        /// IC IALLU, local.
        IcIallu = "ic-iallu",
    }
}

/// Declares [`Param`] from one table of parameter names.
macro_rules! params {
    ($( $(#[$m:meta])* $p:ident = $name:literal, )*) => {
        /// A parameter in a measurement's identity (`params` of a `metric` record, `/key=value`
        /// parts of its phase name).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Param {
            $( $(#[$m])* $p, )*
        }

        impl Param {
            /// Every parameter.
            pub const ALL: &'static [Param] = &[$(Self::$p),*];

            /// The wire name.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$p => $name,)*
                }
            }
        }
    };
}

params! {
    /// Pointer-chase node size, bytes (latency).
    Line = "line",
    /// Bytes per group of the pointer chase's random order (latency; absent: 4096, random
    /// within 4 KiB pages).
    ChaseGroup = "group",
    /// PRFM distance, bytes (stream).
    PrefetchDistance = "prefetch_distance",
    /// Tokens after the append, or tokens scanned (kv, kv-paged, kv-quant).
    Tokens = "tokens",
    /// Tokens in the ring (kv).
    Cached = "cached",
    /// Record stride or sweep stride, bytes (kv, infer line).
    Stride = "stride",
    /// 1 once the ring wrapped (kv).
    Wrapped = "wrapped",
    /// Tokens per KV block (kv-paged, kv-quant, kv-prefix).
    Block = "block",
    /// Sequences (kv-prefix).
    Sequences = "sequences",
    /// Prefix tokens (kv-prefix).
    Prefix = "prefix",
    /// Tokens after the prefix (kv-prefix).
    Suffix = "suffix",
    /// Bytes per batch (stream-double).
    Batch = "batch",
    /// Batches per window (stream-double).
    Batches = "batches",
    /// Cache level (infer ways).
    Level = "level",
    /// Addresses in the conflict set (infer ways).
    N = "n",
    /// Round trips per window (the multicore suite's pingpong).
    Iters = "iters",
    /// Cores taking part (the multicore suite).
    Cores = "cores",
    /// All-reduce ranks (the multicore suite).
    Ranks = "ranks",
    /// SPSC ring slots (the multicore suite).
    Slots = "slots",
    /// Increments per core per window (the multicore suite's false sharing).
    Incs = "incs",
    /// The other core (the multicore suite's pingpong).
    Peer = "peer",
    /// Maintenance operations per window (the multicore suite's broadcast).
    Ops = "ops",
    /// Lines per window (the multicore suite's broadcast).
    Lines = "lines",
    /// The core that writes first (the multicore suite's core-to-core pairs).
    From = "from",
    /// The other core of the pair (the multicore suite's core-to-core pairs).
    To = "to",
    /// Bytes of the streaming write between two scans (`checkpoint`).
    Write = "write",
    /// Bytes written between two DC CIVAC passes (`checkpoint` dc-civac).
    Chunk = "chunk",
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_wire_name_is_unique_and_round_trips() {
        let names: HashSet<&str> = Bench::ALL.iter().map(|b| b.name()).collect();
        assert_eq!(names.len(), Bench::ALL.len());
        let names: HashSet<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(names.len(), Variant::ALL.len());
        for &b in Bench::ALL {
            assert_eq!(Bench::from_name(b.name()), Some(b));
            assert!(!b.variants().is_empty(), "{b:?}");
            for &v in b.variants() {
                assert_eq!((v.bench(), Variant::from_name(v.name()), Variant::of(b, v.name())), (b, Some(v), Some(v)));
            }
        }
        assert_eq!(Bench::from_name("kv_paged"), None);
        assert_eq!(Variant::of(Bench::Kv, "scan-paged"), None);
        let params: HashSet<&str> = Param::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(params.len(), Param::ALL.len());
        let names: HashSet<&str> = SmpVariant::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(names.len(), SmpVariant::ALL.len());
        for &b in SmpBench::ALL {
            assert_eq!(SmpBench::from_name(b.name()), Some(b));
            assert_eq!(Bench::from_name(b.name()), None, "{b}: a name of both suites");
            for &v in b.variants() {
                assert_eq!((v.bench(), SmpVariant::of(b, v.name())), (b, Some(v)));
            }
        }
    }

    #[test]
    fn names_are_phase_name_parts() {
        // A phase name is `bench/variant/attr/bytes/key=value…`: no part may hold '/' or '='.
        let parts = Bench::ALL
            .iter()
            .map(|b| b.name())
            .chain(Variant::ALL.iter().map(|v| v.name()))
            .chain(Param::ALL.iter().map(|p| p.name()))
            .chain(SmpBench::ALL.iter().map(|b| b.name()))
            .chain(SmpVariant::ALL.iter().map(|v| v.name()));
        for n in parts {
            assert!(!n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_'), "{n}");
        }
    }
}
