//! The cluster topology of a profile: which vCPUs share a cluster, what the cluster shares, what
//! joins the clusters, and what a line's hand-over between two cores costs within a cluster and
//! across clusters.
//!
//! vCPU `i` is in cluster `i / cores_per_cluster`, QEMU's numbering for
//! `-smp N,clusters=C,cores=K` (probed on QEMU 10.0.2 `virt`: the device tree's
//! `cpu-map/socket0/clusterC/coreK` lists vCPUs in order, while MPIDR_EL1 stays flat,
//! Aff0 = vCPU index and Aff1 = 0, so the kernel cannot tell clusters from MPIDR there).
//!
//! What the topology changes in the model (rule 19 of `hierarchy.rs`): coherence events are
//! split by whether the two vCPUs share a cluster, and a demand data access served by another
//! core's dirty copy (a *hand-over*) costs the profile's in-cluster or cross-cluster hand-over
//! latency instead of the hit latency of the level it was served from. The caches themselves are
//! the profile's [`crate::geometry::Hierarchy::lower`] levels (shared by all vCPUs or private to
//! each): a cache shared by one cluster only is not modelled as its own tag array (see
//! [`ClusterCache`]).

/// What the cores of one cluster share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterCache {
    /// One L2 for the cluster, inclusive of the L1 data caches (Cortex-A72 MPCore: the
    /// Snoop Control Unit keeps a duplicate of the L1D tags).
    SharedL2Inclusive,
    /// A DynamIQ Shared Unit: private L2 per core, a cluster L3 with a snoop filter
    /// (DSU TRM, 100453: the SCU's snoop filter tracks the lines of the cores' caches).
    DsuL3SnoopFilter,
}

impl ClusterCache {
    /// The record spelling.
    pub const fn name(self) -> &'static str {
        match self {
            Self::SharedL2Inclusive => "shared-l2-inclusive",
            Self::DsuL3SnoopFilter => "dsu-l3-snoop-filter",
        }
    }
}

/// What joins the clusters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interconnect {
    /// One cluster: nothing.
    None,
    /// A CMN-600-style coherent mesh: home nodes (HN-F) with a snoop filter and a system-level
    /// cache (CMN-600 TRM, 100180).
    CmnSlc,
}

impl Interconnect {
    /// The record spelling.
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::CmnSlc => "cmn-hnf-slc",
        }
    }
}

/// What one line hand-over between two cores costs: a demand data access that misses its own
/// caches and is served by the other core's dirty copy (load-to-use, cycles at the profile's
/// clock). `None`: the hit latency of the level the model served it from (the first shared
/// level, or memory), as without a topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandOver {
    /// Both cores in one cluster.
    pub in_cluster_cycles: Option<u32>,
    /// The cores in different clusters (unused with one cluster).
    pub cross_cluster_cycles: Option<u32>,
    /// Where the figures come from, or that they are estimates.
    pub reference: &'static str,
}

/// A profile's topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Number of clusters (≥ 1).
    pub clusters: u32,
    /// Cores in each cluster (≥ 1).
    pub cores_per_cluster: u32,
    /// What a cluster shares.
    pub cluster_cache: ClusterCache,
    /// What joins the clusters ([`Interconnect::None`] with one cluster).
    pub interconnect: Interconnect,
    /// Hand-over costs.
    pub handover: HandOver,
}

/// Hand-over costs of the `guest` profile and of custom hierarchies.
pub const GENERIC_HANDOVER_REF: &str =
    "generic default (not a measurement): one cluster, a hand-over costs the hit latency of the level that serves it (the first shared level, or memory)";
/// Hand-over costs of the `rpi4` profile.
pub const RPI4_HANDOVER_REF: &str = "Cortex-A72 MPCore TRM (100095), 7.2: the SCU serves a line another core holds dirty through \
     the shared L2's control logic; costed as the profile's L2 hit (21 cycles, itself an estimate, see latency_ref): an \
     estimate, no published per-pair measurement of the BCM2711";
/// Hand-over costs of the `rpi5` profile.
pub const RPI5_HANDOVER_REF: &str = "DSU TRM (100453): the SCU moves a dirty line between the cores' private L2s by a direct \
     cache-to-cache transfer; costed as the profile's L3 hit (41 cycles, sbc-bench): an estimate, no published per-pair \
     measurement of the BCM2712";
/// Hand-over costs of the `dsu2x4` profile.
pub const DSU2X4_HANDOVER_REF: &str = "in-cluster as the rpi5 profile (DSU direct cache-to-cache transfer costed as the L3 hit, \
     41 cycles); cross-cluster through a CMN-600 home node (CMN-600 TRM 100180: the requester's read goes to the HN-F, whose \
     snoop filter forwards a snoop to the owning cluster, which sends the data back) estimated at 2.5x the in-cluster figure, \
     103 cycles = 43 ns at 2.4 GHz: both estimates, the ratio 2.5 is the model's assumption, not a measurement";

impl Topology {
    /// One cluster of `cores` cores sharing the hierarchy's shared level, a hand-over costing
    /// `cycles`.
    pub fn single(cores: u32, cluster_cache: ClusterCache, cycles: Option<u32>, reference: &'static str) -> Self {
        Self {
            clusters: 1,
            cores_per_cluster: cores,
            cluster_cache,
            interconnect: Interconnect::None,
            handover: HandOver { in_cluster_cycles: cycles, cross_cluster_cycles: cycles, reference },
        }
    }

    /// The `guest` profile's (and a custom hierarchy's): one cluster, a hand-over costing the
    /// level that served it.
    pub fn generic() -> Self {
        Self::single(4, ClusterCache::SharedL2Inclusive, None, GENERIC_HANDOVER_REF)
    }

    /// The built-in profile's topology.
    pub fn profile(name: &str) -> Option<Self> {
        match name {
            "rpi4" => Some(Self::single(4, ClusterCache::SharedL2Inclusive, Some(21), RPI4_HANDOVER_REF)),
            "rpi5" => Some(Self::single(4, ClusterCache::DsuL3SnoopFilter, Some(41), RPI5_HANDOVER_REF)),
            "dsu2x4" => Some(Self {
                clusters: 2,
                cores_per_cluster: 4,
                cluster_cache: ClusterCache::DsuL3SnoopFilter,
                interconnect: Interconnect::CmnSlc,
                handover: HandOver { in_cluster_cycles: Some(41), cross_cluster_cycles: Some(103), reference: DSU2X4_HANDOVER_REF },
            }),
            _ => None,
        }
    }

    /// The cluster of vCPU `cpu` (QEMU's order; vCPUs past the profile's cores are in further
    /// clusters of the same size).
    pub fn cluster_of(&self, cpu: usize) -> usize {
        cpu / self.cores_per_cluster.max(1) as usize
    }

    /// Whether `a` and `b` are in different clusters.
    pub fn crosses(&self, a: usize, b: usize) -> bool {
        self.cluster_of(a) != self.cluster_of(b)
    }

    /// The cost of one hand-over between `a` and `b` (`None`: the serving level's).
    pub fn handover_cycles(&self, a: usize, b: usize) -> Option<u32> {
        if self.crosses(a, b) {
            self.handover.cross_cluster_cycles
        } else {
            self.handover.in_cluster_cycles
        }
    }

    /// The cores of the whole topology.
    pub fn cores(&self) -> u32 {
        self.clusters * self.cores_per_cluster
    }

    /// QEMU's `-smp` value for this topology (`8,clusters=2,cores=4`; a single cluster: `4`).
    pub fn qemu_smp(&self) -> String {
        if self.clusters == 1 {
            self.cores().to_string()
        } else {
            format!("{},clusters={},cores={}", self.cores(), self.clusters, self.cores_per_cluster)
        }
    }

    /// Checks the shape: at least one core per cluster and one cluster, an interconnect exactly
    /// when there are several clusters, and a cross-cluster hand-over no cheaper than an
    /// in-cluster one.
    pub fn validate(&self) -> Result<(), String> {
        if self.clusters == 0 || self.cores_per_cluster == 0 {
            return Err("a topology needs at least one cluster of at least one core".into());
        }
        if (self.clusters > 1) != (self.interconnect != Interconnect::None) {
            return Err(format!("{} cluster(s) with interconnect {}", self.clusters, self.interconnect.name()));
        }
        if let (Some(i), Some(c)) = (self.handover.in_cluster_cycles, self.handover.cross_cluster_cycles) {
            if c < i {
                return Err(format!("a cross-cluster hand-over ({c} cycles) costs less than an in-cluster one ({i})"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_follow_qemus_numbering() {
        let t = Topology::profile("dsu2x4").unwrap();
        t.validate().unwrap();
        assert_eq!((0..8).map(|c| t.cluster_of(c)).collect::<Vec<_>>(), [0, 0, 0, 0, 1, 1, 1, 1]);
        assert!(!t.crosses(1, 3) && t.crosses(3, 4));
        assert_eq!((t.handover_cycles(0, 3), t.handover_cycles(0, 7)), (Some(41), Some(103)));
        assert_eq!(t.qemu_smp(), "8,clusters=2,cores=4");
        let r = Topology::profile("rpi4").unwrap();
        assert_eq!((r.qemu_smp(), r.handover_cycles(0, 3)), ("4".to_string(), Some(21)));
        assert!(Topology::profile("rpi3").is_none());
    }

    #[test]
    fn bad_shapes_are_refused() {
        let mut t = Topology::profile("dsu2x4").unwrap();
        t.interconnect = Interconnect::None;
        assert!(t.validate().unwrap_err().contains("interconnect none"));
        let mut t = Topology::profile("dsu2x4").unwrap();
        t.handover.cross_cluster_cycles = Some(10);
        assert!(t.validate().is_err());
        let t = Topology { cores_per_cluster: 0, ..Topology::generic() };
        assert!(t.validate().is_err());
    }
}
