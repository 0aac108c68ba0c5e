//! Cache geometry: one cache's size, associativity and line size, a hierarchy of them, the
//! built-in profiles (`rpi4`, `rpi5`) and the `SIZE:WAYS:LINE` argument syntax.

use std::fmt;

use crate::topology::Topology;

use crate::cache::Policy;

/// One cache's shape. `sets = size / (ways * line)`; line and sets are powers of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Line size in bytes.
    pub line: u32,
    /// Number of sets.
    pub sets: u32,
    /// Associativity.
    pub ways: u32,
}

impl Geometry {
    /// A geometry from sets and ways; `Err` names what is wrong.
    pub fn new(line: u32, sets: u32, ways: u32) -> Result<Self, String> {
        if !line.is_power_of_two() || !(4..=4096).contains(&line) {
            return Err(format!("line size {line} is not a power of two in 4..=4096"));
        }
        if !sets.is_power_of_two() || sets > 1 << 24 {
            return Err(format!("number of sets {sets} is not a power of two up to 2^24"));
        }
        if ways == 0 || ways > 256 {
            return Err(format!("associativity {ways} is not in 1..=256"));
        }
        Ok(Self { line, sets, ways })
    }

    /// A geometry from a total size; the size must divide into a power-of-two number of sets.
    pub fn from_size(size: u64, ways: u32, line: u32) -> Result<Self, String> {
        let per_set = u64::from(ways) * u64::from(line);
        if ways == 0 || per_set == 0 || size == 0 || !size.is_multiple_of(per_set) {
            return Err(format!("size {size} is not a multiple of ways × line ({ways} × {line})"));
        }
        let sets = size / per_set;
        Self::new(line, u32::try_from(sets).map_err(|_| format!("size {size} gives too many sets"))?, ways)
    }

    /// Total capacity in bytes.
    pub fn size(&self) -> u64 {
        u64::from(self.line) * u64::from(self.sets) * u64::from(self.ways)
    }

    /// log2(line size).
    pub fn line_shift(&self) -> u32 {
        self.line.trailing_zeros()
    }

    /// Parses `SIZE:WAYS:LINE`, e.g. `32K:2:64` or `1M:16:64` (K/M/G = ×1024ⁿ; LINE defaults to 64).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = text.split(':');
        let size = parse_size(parts.next().unwrap_or(""))?;
        let ways = parts.next().ok_or_else(|| format!("'{text}': expected SIZE:WAYS[:LINE]"))?;
        let ways: u32 = ways.parse().map_err(|_| format!("'{text}': bad associativity '{ways}'"))?;
        let line = match parts.next() {
            Some(l) => l.parse().map_err(|_| format!("'{text}': bad line size '{l}'"))?,
            None => 64,
        };
        if parts.next().is_some() {
            return Err(format!("'{text}': expected SIZE:WAYS[:LINE]"));
        }
        Self::from_size(size, ways, line).map_err(|e| format!("'{text}': {e}"))
    }
}

impl fmt::Display for Geometry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = self.size();
        if size.is_multiple_of(1 << 20) {
            write!(f, "{}M:{}:{}", size >> 20, self.ways, self.line)
        } else if size.is_multiple_of(1 << 10) {
            write!(f, "{}K:{}:{}", size >> 10, self.ways, self.line)
        } else {
            write!(f, "{}:{}:{}", size, self.ways, self.line)
        }
    }
}

/// Parses a byte count with an optional K/M/G (binary) suffix.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.as_bytes().last() {
        Some(b'K' | b'k') => (&t[..t.len() - 1], 10),
        Some(b'M' | b'm') => (&t[..t.len() - 1], 20),
        Some(b'G' | b'g') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = digits.parse().map_err(|_| format!("bad size '{text}'"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("size '{text}' overflows"))
}

/// Whether a level below L1 has one cache per vCPU or one for all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// One cache shared by every vCPU.
    Shared,
    /// One cache per vCPU.
    Private,
}

impl Sharing {
    /// `"shared"` or `"private"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Private => "private",
        }
    }
}

/// A level below L1 (L2 or L3): always a unified cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowerLevel {
    /// Its geometry.
    pub geometry: Geometry,
    /// Shared or per vCPU.
    pub sharing: Sharing,
}

/// Which hardware data prefetcher the model runs (`hwpf=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwPfKind {
    /// None.
    Off,
    /// Tagged next-line: on an L1D demand miss, or the first demand hit on a prefetched line,
    /// prefetch `degree` lines starting `distance` lines ahead.
    NextLine,
    /// Per-PC stride: a 16-entry table keyed by the access's PC, trained on the same events;
    /// after two equal line strides, prefetch `degree` lines starting `distance` strides ahead.
    Stride,
}

impl HwPfKind {
    /// Parses `off`, `nextline`, `stride`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "off" => Some(Self::Off),
            "nextline" => Some(Self::NextLine),
            "stride" => Some(Self::Stride),
            _ => None,
        }
    }

    /// The argument spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::NextLine => "nextline",
            Self::Stride => "stride",
        }
    }
}

/// The hardware data prefetcher of a profile. Prefetches fill L1D (and the levels below it, as
/// any prefetch does) and never cross a 4 KiB page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwPrefetch {
    /// Which prefetcher.
    pub kind: HwPfKind,
    /// How far ahead the first prefetch is: lines (next-line) or strides (stride), ≥ 1.
    pub distance: u32,
    /// How many consecutive lines (next-line) or strides (stride) each trigger prefetches, ≥ 1.
    pub degree: u32,
    /// Where the choice comes from (the `model-profile` record's `hwpf_ref`).
    pub reference: String,
}

impl HwPrefetch {
    /// No hardware prefetcher (the generic default).
    pub fn off(reference: &str) -> Self {
        Self { kind: HwPfKind::Off, distance: 1, degree: 1, reference: reference.into() }
    }
}

/// Modelled latencies: the cost of a demand data access by the level that served it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Latency {
    /// Core clock in MHz (cycles → ns).
    pub clock_mhz: u32,
    /// Load-to-use cycles of a hit in L1, L2, L3 (L3 unused without one).
    pub hit_cycles: [u32; 3],
    /// Cycles of an access served by memory (also every access that bypasses the caches).
    pub memory_cycles: u32,
    /// Where the figures come from (the `model-profile` record's `latency_ref`).
    pub reference: String,
}

impl Latency {
    /// `cycles` at this clock in ns.
    pub fn ns(&self, cycles: u64) -> f64 {
        cycles as f64 * 1000.0 / f64::from(self.clock_mhz)
    }

    /// The generic default of the `guest` profile: a round-number 2 GHz core with 4/14/40-cycle
    /// L1/L2/L3 hits and 100 ns memory. Not a measurement of anything.
    pub fn generic() -> Self {
        Self {
            clock_mhz: 2000,
            hit_cycles: [4, 14, 40],
            memory_cycles: 200,
            reference: "generic default (not a measurement): 2 GHz, L1 4, L2 14, L3 40 cycles, memory 200 cycles = 100 ns".into(),
        }
    }
}

/// The Cortex-A72 TRM's and A76 TRM's prefetcher descriptions the profiles approximate.
pub const RPI4_HWPF_REF: &str = "Arm Cortex-A72 MPCore TRM (ARM 100095_0002_04), 6.4.9 Load/store hardware prefetcher (load-side \
     prefetches into L1D and L2 on detected access patterns) and 7.4 L2 cache prefetcher (prefetches stay within the 4KB \
     page): approximated by a per-PC stride prefetcher into L1D, distance 2, degree 2 (an estimate; the TRM gives no figures)";
/// See [`RPI4_HWPF_REF`].
pub const RPI5_HWPF_REF: &str = "Arm Cortex-A76 Core TRM (ARM 100798), A6.5 Data prefetching, Data prefetching and monitoring \
     (the load-side prefetcher uses the VA to prefetch to L1 and L2): approximated by a per-PC stride prefetcher into L1D, \
     distance 4, degree 2 (an estimate; the TRM gives no figures)";
/// Where the `rpi4` profile's L1I indexing comes from.
pub const RPI4_INDEX_REF: &str = "Cortex-A72: CTR_EL0.L1Ip = 0b11 (PIPT), the CTR_EL0 reset value 0x8444c004 QEMU's cortex-a72 reports";
/// Where the `rpi5` profile's L1I indexing comes from.
pub const RPI5_INDEX_REF: &str = "Cortex-A76: CTR_EL0.L1Ip = 0b11 (PIPT), the CTR_EL0 reset value 0x8444c004 QEMU's cortex-a76 reports";
/// Where a guest geometry's L1I indexing comes from before CTR_EL0 is known.
pub const DEFAULT_INDEX_REF: &str = "default: PIPT (CTR_EL0 not read)";

/// Latency sources of the `rpi4` profile.
pub const RPI4_LATENCY_REF: &str = "Cortex-A72 at 1.5 GHz (BCM2711): L1D load-to-use 4 cycles (Arm Cortex-A72 Software \
     Optimization Guide, UAN 0016A: load latency 4 cycles); L2 21 cycles and memory ~150 ns = 225 cycles are estimates from \
     published Raspberry Pi 4 lmbench/tinymembench latency runs (sbc-bench), not exact figures";
/// Latency sources of the `rpi5` profile.
pub const RPI5_LATENCY_REF: &str = "Cortex-A76 at 2.4 GHz (BCM2712), sbc-bench Raspberry Pi 5 figures: L1 1.67 ns = 4 cycles, \
     L2 5.0 ns = 12 cycles, L3 ~17 ns = 41 cycles, DRAM ~125 ns = 300 cycles";

/// Latency sources of the `dsu2x4` profile.
pub const DSU2X4_LATENCY_REF: &str = "modelled on a 2 x 4 Cortex-A76 system, each cluster a DynamIQ Shared Unit (DSU TRM \
     100453) on an Arm CMN-600 mesh (CMN-600 TRM 100180) with its system-level cache in the home nodes: core clock, L1 and \
     L2 as the rpi5 profile (sbc-bench Raspberry Pi 5: 4 and 12 cycles); the shared level (the SLC with the cluster L3s \
     folded in, 4 MiB) at the Pi 5's L3 hit, 41 cycles, and memory 300 cycles: estimates, no measured system";

/// Where the `rpi4` profile's replacement policies and inclusion come from (the
/// `model-profile` record's `policy_ref`).
pub const RPI4_POLICY_REF: &str = "Arm Cortex-A72 MPCore TRM (ARM 100095_0002_04), 7.1 About the L2 memory system: L2 16-way, \
     \"Inclusion property with L1 data caches\" (rule 18: +incl) and \"Software-programmable pseudo-least-recently-used or \
     pseudo-random cache-replacement policy\": modelled as tree pseudo-LRU (plru); the reset default is not in the TRM text \
     consulted, so the choice of PLRU over pseudo-random is an estimate (the pseudo-random alternative is `policy=random`: \
     a uniform choice among the set's ways from a per-cache xorshift64* stream, not the silicon's own generator). L1I (3-way) \
     and L1D (2-way): the TRM text consulted names no replacement policy; LRU is an estimate (for 2 ways PLRU and LRU are the \
     same)";
/// Where the `rpi5` (and `dsu2x4`) profile's replacement policies come from.
pub const RPI5_POLICY_REF: &str = "Arm Cortex-A76 Core TRM (ARM 100798_0300_00), A6.1.1 and A6.1.2: L1I and L1D 4-way with a \
     \"Pseudo-LRU cache replacement policy\" (tree pseudo-LRU, plru); the private L2 and the DSU L3: the TRM text consulted \
     gives no replacement policy, pseudo-LRU is an estimate; no level is modelled inclusive (the TRM text consulted states no \
     inclusion)";
/// `policy_ref` of a hierarchy without a profile (the guest's geometry or arguments).
pub const GENERIC_POLICY_REF: &str = "generic default: LRU at every level, nothing inclusive (or the `policy` argument)";

/// Which rules the model applies (`impl=`): the architecture's, or the profile's core's
/// documented deviations from them ([`Deviations`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Impl {
    /// The Arm architecture's rules (the default: the sanitizer's verdict and every baseline
    /// judge architectural behaviour).
    #[default]
    Arch,
    /// The profile's core's TRM deviations ([`Deviations::of_profile`]); needs a profile.
    Silicon,
}

impl Impl {
    /// Both, in argument order.
    pub const ALL: [Impl; 2] = [Impl::Arch, Impl::Silicon];

    /// The argument's value and the `model-profile` record's `implementation`.
    pub const fn name(self) -> &'static str {
        match self {
            Impl::Arch => "arch",
            Impl::Silicon => "silicon",
        }
    }

    /// The mode named `v`.
    pub fn parse(v: &str) -> Option<Impl> {
        Self::ALL.into_iter().find(|m| m.name() == v)
    }
}

/// Write-streaming mode's threshold of the `rpi5` profile, in consecutive full-line stores: an
/// estimate. The Cortex-A76 TRM (A6.2.6) describes the mode but gives no reset threshold
/// (CPUECTLR_EL1 configures it); three full lines is the figure the TRMs of the Cortex-A35/A53
/// line give for their read-allocate mode.
pub const RPI5_WRITE_STREAMING_LINES: u32 = 3;

/// The core's documented deviations from the architecture that silicon mode applies (rule 20 in
/// `hierarchy.rs`). [`Deviations::NONE`] is the architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deviations {
    /// DC IVAC is executed as DC CIVAC (rule 20a).
    pub ivac_as_civac: bool,
    /// DC ISW also cleans (rule 20b).
    pub isw_cleans: bool,
    /// Inner Write-Through memory is Non-cacheable (rule 20c).
    pub wt_as_nc: bool,
    /// Write-streaming mode after this many consecutive full-line stores (rule 20d; `None`: off).
    pub write_streaming: Option<u32>,
    /// Where they come from (the `model-profile` record's `deviations_ref`).
    pub reference: &'static str,
}

/// The Cortex-A76 TRM sections the `rpi5` profile's silicon mode follows.
pub const RPI5_DEVIATIONS_REF: &str = "Arm Cortex-A76 Core TRM (ARM 100798_0300_00): A6.2.4 \"DC IVAC operations in AArch64 \
     state are treated as DC CIVAC\" and \"DC ISW operations ... perform both a clean and invalidate\"; A7.3 \"Memory that is \
     marked Inner Write-Through is downgraded to Non-cacheable\"; A6.2.6 write streaming mode (stores that miss L1D write out to \
     L2 instead of a linefill; the threshold, 3 full lines, is an estimate: the TRM gives none). A6.2.2 (instruction fetches \
     from Device pages are Normal Non-cacheable) needs no rule: the model fetches Device and Non-cacheable alike (bypass)";
/// What the `rpi4` profile's silicon mode follows.
pub const RPI4_DEVIATIONS_REF: &str = "Arm Cortex-A72 MPCore TRM (ARM 100095_0002_04): the TRM text consulted documents no \
     deviation of the A76 kind (DC IVAC, DC ISW, Write-Through, write streaming), so silicon mode applies none; the A72's \
     documented implementation choices the model follows in both modes are its replacement and inclusion (policy_ref)";

impl Deviations {
    /// The architecture: no deviation.
    pub const NONE: Deviations =
        Deviations { ivac_as_civac: false, isw_cleans: false, wt_as_nc: false, write_streaming: None, reference: "the architecture" };

    /// The silicon deviations of a built-in profile's core (`None`: no such profile).
    pub fn of_profile(name: &str) -> Option<Deviations> {
        match name {
            "rpi5" | "dsu2x4" => Some(Deviations {
                ivac_as_civac: true,
                isw_cleans: true,
                wt_as_nc: true,
                write_streaming: Some(RPI5_WRITE_STREAMING_LINES),
                reference: RPI5_DEVIATIONS_REF,
            }),
            "rpi4" => Some(Deviations { reference: RPI4_DEVIATIONS_REF, ..Deviations::NONE }),
            _ => None,
        }
    }

    /// Whether any rule applies.
    pub fn any(&self) -> bool {
        self.ivac_as_civac || self.isw_cleans || self.wt_as_nc || self.write_streaming.is_some()
    }

    /// The rules applied, comma-separated (`write-streaming=N`), empty for none: the
    /// `model-profile` record's `deviations` and the trace header's `silicon=` word.
    pub fn spelling(&self) -> String {
        use cachescope_arch::hazard::SiliconRule as R;
        let mut v: Vec<String> = Vec::new();
        for (on, r) in [(self.ivac_as_civac, R::IvacAsCivac), (self.isw_cleans, R::IswCleans), (self.wt_as_nc, R::WtAsNc)] {
            if on {
                v.push(r.name().into());
            }
        }
        if let Some(n) = self.write_streaming {
            v.push(format!("{}={n}", R::WriteStreaming.name()));
        }
        v.join(",")
    }

    /// Parses [`Deviations::spelling`] (the reference is not part of it).
    pub fn parse(text: &str) -> Result<Deviations, String> {
        use cachescope_arch::hazard::SiliconRule as R;
        let mut d = Deviations::NONE;
        for w in text.split(',').filter(|w| !w.is_empty()) {
            let (name, n) = w.split_once('=').map_or((w, None), |(a, b)| (a, Some(b)));
            match (R::from_name(name), n) {
                (Some(R::IvacAsCivac), None) => d.ivac_as_civac = true,
                (Some(R::IswCleans), None) => d.isw_cleans = true,
                (Some(R::WtAsNc), None) => d.wt_as_nc = true,
                (Some(R::WriteStreaming), Some(n)) => {
                    d.write_streaming =
                        Some(n.parse().ok().filter(|n| *n >= 1).ok_or_else(|| format!("bad write-streaming threshold '{n}'"))?)
                }
                _ => return Err(format!("bad deviation '{w}'")),
            }
        }
        Ok(d)
    }
}

/// Replacement policy per level and inclusion (the [`Hierarchy::policy`] field).
///
/// Written `lru` when every level has one policy and nothing is inclusive, else per level
/// `L1I/L1D/L2/L3`, each lower level optionally followed by `+incl` (inclusive of the L1Ds it
/// serves: see rule 18 in `hierarchy.rs`), e.g. `lru/lru/random+incl/lru`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// L1 instruction caches.
    pub l1i: Policy,
    /// L1 data caches.
    pub l1d: Policy,
    /// L2 and L3 (only as many as the hierarchy has are used).
    pub lower: [Policy; 2],
    /// Whether L2 / L3 is inclusive of the L1D caches it serves (back-invalidation).
    pub inclusive: [bool; 2],
}

impl From<Policy> for Replacement {
    fn from(p: Policy) -> Self {
        Self::uniform(p)
    }
}

impl Replacement {
    /// One policy everywhere, nothing inclusive.
    pub const fn uniform(p: Policy) -> Self {
        Self { l1i: p, l1d: p, lower: [p; 2], inclusive: [false; 2] }
    }

    /// The policy at path position `k` in record order: 0 = L1I, 1 = L1D, 2 = L2, 3 = L3.
    pub fn level(&self, k: usize) -> Policy {
        match k {
            0 => self.l1i,
            1 => self.l1d,
            _ => self.lower[(k - 2).min(1)],
        }
    }

    /// The spelling above (L3's part is written whether or not the hierarchy has an L3).
    pub fn spelling(&self) -> String {
        let uniform = (0..4).all(|k| self.level(k) == self.l1d) && !self.inclusive.contains(&true);
        if uniform {
            return self.l1d.name().to_string();
        }
        let mut s = format!("{}/{}", self.l1i.name(), self.l1d.name());
        for i in 0..2 {
            s += &format!("/{}{}", self.lower[i].name(), if self.inclusive[i] { "+incl" } else { "" });
        }
        s
    }

    /// [`Replacement::spelling`] as a `&'static str` (for records): each distinct spelling is
    /// kept once for the process (there are at most 4⁴ × 4 of them).
    pub fn name(&self) -> &'static str {
        static SEEN: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
        let text = self.spelling();
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = seen.iter().find(|s| **s == text) {
            return s;
        }
        let s: &'static str = Box::leak(text.into_boxed_str());
        seen.push(s);
        s
    }

    /// Parses [`Replacement::spelling`]'s forms.
    pub fn parse(text: &str) -> Option<Self> {
        if let Some(p) = Policy::parse(text) {
            return Some(Self::uniform(p));
        }
        let parts: Vec<&str> = text.split('/').collect();
        if parts.len() != 4 {
            return None;
        }
        let mut r = Self::uniform(Policy::parse(parts[1])?);
        r.l1i = Policy::parse(parts[0])?;
        for (i, p) in parts[2..].iter().enumerate() {
            let (name, incl) = match p.strip_suffix("+incl") {
                Some(n) => (n, true),
                None => (*p, false),
            };
            r.lower[i] = Policy::parse(name)?;
            r.inclusive[i] = incl;
        }
        Some(r)
    }
}

/// How the L1 instruction caches are indexed (CTR_EL0.L1Ip's policies the model follows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Indexing {
    /// Physically indexed, physically tagged (CTR_EL0.L1Ip = 0b11): aliases of one PA are one line.
    Pipt,
    /// Virtually indexed, physically tagged (CTR_EL0.L1Ip = 0b10): the set-index bits above the
    /// 4 KiB page offset come from the fetch's VA, so one PA fetched through two VAs whose bits
    /// there differ is cached twice, in two sets (rule 21 in `hierarchy.rs`).
    Vipt,
}

impl Indexing {
    /// Every policy, in argument order.
    pub const ALL: [Indexing; 2] = [Indexing::Pipt, Indexing::Vipt];

    /// The argument and record spelling: `pipt`, `vipt`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Pipt => "pipt",
            Self::Vipt => "vipt",
        }
    }

    /// Parses [`Indexing::name`].
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|i| i.name() == text)
    }

    /// The policy CTR_EL0.L1Ip (bits 15:14) names: 0b10 VIPT; 0b11 PIPT; 0b01 (AIVIVT, AArch32
    /// only) and 0b00 (VPIPT, a virtualization-tagged PIPT) are modelled as PIPT.
    pub const fn of_ctr(ctr: u64) -> Self {
        if (ctr >> 14) & 0b11 == 0b10 {
            Self::Vipt
        } else {
            Self::Pipt
        }
    }
}

/// The page size VIPT indexing assumes: 4 KiB, the granule the kernel and every firmware the
/// model has met use (a 16 or 64 KiB granule would need fewer VA bits; not followed).
pub const VIPT_PAGE_SHIFT: u32 = 12;

/// The whole modelled hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// Per-vCPU L1 instruction cache.
    pub l1i: Geometry,
    /// How the L1I is indexed (PIPT or VIPT; the data side is always PIPT, as AArch64 requires).
    pub l1i_index: Indexing,
    /// Where [`Hierarchy::l1i_index`] comes from (the `model-geometry` record's `index_ref`).
    pub l1i_index_ref: &'static str,
    /// Per-vCPU L1 data cache.
    pub l1d: Geometry,
    /// Unified levels below L1 in order (L2, then L3); at most two.
    pub lower: Vec<LowerLevel>,
    /// Replacement policy of each level, and which lower levels are inclusive.
    pub policy: Replacement,
    /// Seed of the random policy (each cache derives its own stream from it).
    pub seed: u64,
    /// DC ZVA block size in bytes (DCZID_EL0: 64 on the QEMU Cortex models).
    pub zva_bytes: u32,
    /// Hardware data prefetcher.
    pub hwpf: HwPrefetch,
    /// Latency table.
    pub latency: Latency,
    /// Clusters, interconnect and hand-over costs (`topology.rs`).
    pub topology: Topology,
    /// Where the policies and inclusion come from (the `model-profile` record's `policy_ref`).
    pub policy_ref: &'static str,
    /// The core's deviations from the architecture the model applies (rule 20; `impl=silicon`).
    pub silicon: Deviations,
}

impl Hierarchy {
    /// Checks the constraints the model relies on: a lower level's line is at least as long as
    /// the level above it (one upper-level miss is one lower-level line), at most L3, and a
    /// power-of-two ZVA block of at least one L1D line.
    pub fn validate(&self) -> Result<(), String> {
        if self.lower.len() > 2 {
            return Err("at most two levels below L1 (L2, L3) are modelled".into());
        }
        let mut above = self.l1i.line.max(self.l1d.line);
        for (i, l) in self.lower.iter().enumerate() {
            if l.geometry.line < above {
                return Err(format!("L{} line size {} is shorter than the level above ({above})", i + 2, l.geometry.line));
            }
            above = l.geometry.line;
        }
        if self.hwpf.distance == 0 || self.hwpf.degree == 0 || self.hwpf.distance > 64 || self.hwpf.degree > 64 {
            return Err("hwpf_distance and hwpf_degree must be in 1..=64".into());
        }
        if !self.zva_bytes.is_power_of_two() || self.zva_bytes > 2048 {
            return Err(format!("DC ZVA block {} is not a power of two up to 2048", self.zva_bytes));
        }
        self.topology.validate()
    }

    /// A built-in profile by name: `rpi4` (Cortex-A72 in the Pi 4), `rpi5` (Cortex-A76 in the
    /// Pi 5) or `dsu2x4` (two DSU clusters of four Cortex-A76 on a CMN-600 mesh).
    pub fn profile(name: &str) -> Option<Self> {
        let g = |s: &str| Geometry::parse(s).expect("built-in profile geometry");
        match name {
            // BCM2711: L1I 48 KiB 3-way, L1D 32 KiB 2-way, L2 1 MiB 16-way shared by the 4 cores.
            "rpi4" => Some(Self {
                l1i: g("48K:3:64"),
                l1i_index: Indexing::Pipt,
                l1i_index_ref: RPI4_INDEX_REF,
                l1d: g("32K:2:64"),
                lower: vec![LowerLevel { geometry: g("1M:16:64"), sharing: Sharing::Shared }],
                // RPI4_POLICY_REF: L1s LRU (an estimate), L2 tree pseudo-LRU inclusive of L1D.
                policy: Replacement { l1i: Policy::Lru, l1d: Policy::Lru, lower: [Policy::Plru; 2], inclusive: [true, false] },
                seed: 1,
                zva_bytes: 64,
                hwpf: HwPrefetch { kind: HwPfKind::Stride, distance: 2, degree: 2, reference: RPI4_HWPF_REF.into() },
                latency: Latency { clock_mhz: 1500, hit_cycles: [4, 21, 21], memory_cycles: 225, reference: RPI4_LATENCY_REF.into() },
                topology: Topology::profile("rpi4").expect("built in"),
                policy_ref: RPI4_POLICY_REF,
                silicon: Deviations::NONE,
            }),
            // BCM2712: L1I/L1D 64 KiB 4-way, L2 512 KiB 8-way per core, L3 2 MiB 16-way shared.
            "rpi5" => Some(Self {
                l1i: g("64K:4:64"),
                l1i_index: Indexing::Pipt,
                l1i_index_ref: RPI5_INDEX_REF,
                l1d: g("64K:4:64"),
                lower: vec![
                    LowerLevel { geometry: g("512K:8:64"), sharing: Sharing::Private },
                    LowerLevel { geometry: g("2M:16:64"), sharing: Sharing::Shared },
                ],
                // RPI5_POLICY_REF: pseudo-LRU everywhere (L1s per the TRM, L2/L3 estimates).
                policy: Replacement::uniform(Policy::Plru),
                seed: 1,
                zva_bytes: 64,
                hwpf: HwPrefetch { kind: HwPfKind::Stride, distance: 4, degree: 2, reference: RPI5_HWPF_REF.into() },
                latency: Latency { clock_mhz: 2400, hit_cycles: [4, 12, 41], memory_cycles: 300, reference: RPI5_LATENCY_REF.into() },
                topology: Topology::profile("rpi5").expect("built in"),
                policy_ref: RPI5_POLICY_REF,
                silicon: Deviations::NONE,
            }),
            // Two DSU clusters of four Cortex-A76 joined by a CMN-600 (DSU2X4_LATENCY_REF): the
            // cores' L1s and L2s as the Pi 5's; the shared level stands for the system-level
            // cache behind the mesh, the clusters' DSU L3s folded into it.
            "dsu2x4" => Self::profile("rpi5").map(|rpi5| Self {
                lower: vec![rpi5.lower[0], LowerLevel { geometry: g("4M:16:64"), sharing: Sharing::Shared }],
                latency: Latency { reference: DSU2X4_LATENCY_REF.into(), ..rpi5.latency },
                topology: Topology::profile("dsu2x4").expect("built in"),
                ..rpi5
            }),
            _ => None,
        }
    }

    /// The latency a hand-over (rule 19 of `hierarchy.rs`) is served at without a topology
    /// figure: the hit of the first shared level, where the model writes the dirty copy back,
    /// or memory when every level is private.
    pub fn serving_cycles(&self) -> u32 {
        let private = self.lower.iter().take_while(|l| l.sharing == Sharing::Private).count();
        if private < self.lower.len() {
            self.latency.hit_cycles[private + 1]
        } else {
            self.latency.memory_cycles
        }
    }

    /// Names of the built-in profiles.
    pub const PROFILES: &'static [&'static str] = &["rpi4", "rpi5", "dsu2x4"];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_geometries() {
        assert_eq!(parse_size("32K"), Ok(32 << 10));
        assert_eq!(parse_size("2M"), Ok(2 << 20));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("x").is_err());
        let g = Geometry::parse("32K:2:64").unwrap();
        assert_eq!((g.line, g.sets, g.ways), (64, 256, 2));
        let g = Geometry::parse("48K:3").unwrap();
        assert_eq!((g.line, g.sets, g.ways), (64, 256, 3));
        assert_eq!(g.to_string(), "48K:3:64");
        assert!(Geometry::parse("32K:3:64").is_err(), "32 KiB / (3 × 64) is not a whole number of sets");
        assert!(Geometry::parse("24K:2:64").is_err(), "192 sets is not a power of two");
        assert!(Geometry::parse("32K:2:48").is_err());
        assert!(Geometry::parse("32K").is_err());
        assert!(Geometry::parse("32K:2:64:1").is_err());
    }

    #[test]
    fn profiles_are_valid() {
        for p in Hierarchy::PROFILES {
            let h = Hierarchy::profile(p).unwrap();
            h.validate().unwrap();
        }
        let h = Hierarchy::profile("rpi4").unwrap();
        assert_eq!(h.l1d.sets, 256);
        assert_eq!(h.lower[0].geometry.size(), 1 << 20);
        let h = Hierarchy::profile("rpi5").unwrap();
        assert_eq!(h.lower.len(), 2);
        assert_eq!(h.lower[0].sharing, Sharing::Private);
        assert!(Hierarchy::profile("rpi3").is_none());
    }

    #[test]
    fn validation_refuses_shrinking_lines() {
        let mut h = Hierarchy::profile("rpi4").unwrap();
        h.lower[0].geometry = Geometry::parse("1M:16:32").unwrap();
        assert!(h.validate().is_err());
    }
}
