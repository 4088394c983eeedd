//! Query execution over pg_columnar tables: the custom scan `PgcolScan`.
//!
//! * [`plan`]: a `set_rel_pathlist_hook` that replaces the sequential scan paths of a
//!   pg_columnar table (serial and partial) by the custom scan's, costed from the columns it
//!   reads, and turns a chosen path into a `CustomScan` plan;
//! * [`quals`]: which quals can skip vectors, translated at plan time;
//! * [`skip`]: those quals checked against zone maps at execution time;
//! * [`filter`]: the quals the node evaluates itself over whole vectors, with the codec's
//!   kernels, instead of the executor row by row;
//! * [`node`]: the executor node (projection, skipping, parallel workers, EXPLAIN);
//! * [`frame`]: what every custom node does the same way (the `CustomNode` trait, the method
//!   tables PostgreSQL is given, their registration, the node's Rust value);
//! * [`agg`]: `PgcolAgg`, aggregates computed from the scan's vectors, with [`group`]
//!   its GROUP BY keys;
//! * [`topn`]: `PgcolTopN`, the first rows by a column (`ORDER BY ... LIMIT`,
//!   `DISTINCT ON`), reading only the vectors that can hold them;
//! * [`index_skip`]: `PgcolIndexSkip`, DISTINCT ON's first row per group of a partitioned
//!   table's row-store partition, one index descent per group;
//! * [`seeds`]: the first rows DISTINCT ON's partitions hand to the ones that run after them.
//!
//! The rows come from `am::scan::VectorScan`, over the same stripe reader as the sequential scan's, told
//! which columns to decode, which vectors to skip and which quals to evaluate. A qual used
//! only for skipping stays in the plan's qual list, evaluated by the executor on every row
//! the node returns: skipping only avoids reading vectors that cannot hold a matching row.
//! A qual the node evaluates exactly (every leaf with a kernel of the operator's own
//! semantics) leaves the qual list. `pg_columnar.enable_vectorized_filter = off` keeps every
//! qual with the executor.
//! `SET pg_columnar.enable_custom_scan = off` plans the plain sequential scan instead.

mod agg;
mod filter;
mod frame;
mod group;
mod index_skip;
mod node;
mod plan;
mod plan_data;
mod quals;
mod seeds;
mod skip;
mod spec;
mod subquery;
mod topn;

pub static ENABLE_CUSTOM_SCAN: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
pub static ENABLE_VECTORIZED_FILTER: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
pub static ENABLE_VECTORIZED_AGG: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
pub static ENABLE_TOPN: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
pub static ENABLE_INDEX_SKIP: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
pub static ENABLE_PARTITION_SEEDS: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
pub static ENABLE_PARAMETERIZED_SCAN: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);
pub static ENABLE_SUBQUERY_VALUES: pgrx::GucSetting<bool> = pgrx::GucSetting::<bool>::new(true);

/// A user-settable switch of query execution, on by default.
fn define_switch(
    name: &'static std::ffi::CStr,
    short: &'static std::ffi::CStr,
    long: &'static std::ffi::CStr,
    setting: &'static pgrx::GucSetting<bool>,
) {
    pgrx::GucRegistry::define_bool_guc(
        name,
        short,
        long,
        setting,
        pgrx::GucContext::Userset,
        pgrx::GucFlags::default(),
    );
}

/// Registers the switches, the plan nodes' methods and the planner hooks (from `_PG_init`).
///
/// # Safety
/// Called once per backend, from `_PG_init`, in the backend's one thread, before any hook can
/// run.
pub unsafe fn install() {
    define_switch(
        c"pg_columnar.enable_custom_scan",
        c"Plan scans of pg_columnar tables as PgcolScan (projection and zone-map skipping).",
        c"Off: the plain sequential scan, which decodes every column of every vector. Results are the same either way.",
        &ENABLE_CUSTOM_SCAN,
    );
    define_switch(
        c"pg_columnar.enable_vectorized_filter",
        c"Let PgcolScan evaluate the quals it can over whole vectors instead of the executor row by row.",
        c"Off: every qual stays with the executor (the scan still uses them to skip vectors). Results are the same either way.",
        &ENABLE_VECTORIZED_FILTER,
    );
    define_switch(
        c"pg_columnar.enable_vectorized_agg",
        c"Plan aggregates over a pg_columnar table as PgcolAgg, computed from whole vectors.",
        c"Off: PostgreSQL's Agg over the scan's rows. Results are the same either way.",
        &ENABLE_VECTORIZED_AGG,
    );
    define_switch(
        c"pg_columnar.enable_topn",
        c"Plan ORDER BY col LIMIT n and DISTINCT ON (g) ... ORDER BY g, col over a pg_columnar table as PgcolTopN, which reads only the vectors that can hold the first rows.",
        c"Off: PostgreSQL's Sort (and Unique) over the scan's rows. Results are the same either way, except the order of rows tied on col, which PostgreSQL leaves unspecified.",
        &ENABLE_TOPN,
    );
    define_switch(
        c"pg_columnar.enable_index_skip",
        c"Under DISTINCT ON (g) ... ORDER BY g, col over a partitioned table with a pg_columnar partition, read each other partition's first row per group through a btree index on (g, col) (PgcolIndexSkip), one index descent per group.",
        c"Off: those partitions' rows are all read and sorted. Results are the same either way.",
        &ENABLE_INDEX_SKIP,
    );
    define_switch(
        c"pg_columnar.enable_partition_seeds",
        c"Under DISTINCT ON (g) ... ORDER BY g, col over a partitioned table, run the partitions in the order's direction and hand each the first rows per group the partitions before it returned, so that PgcolTopN leaves out the stripes and vectors that cannot beat them.",
        c"Off: each partition finds its own first row of every group it holds. Results are the same either way.",
        &ENABLE_PARTITION_SEEDS,
    );
    define_switch(
        c"pg_columnar.enable_parameterized_scan",
        c"Offer PgcolScan as the inner side of a nested loop, skipping stripes and vectors by each outer row's join key as by a constant.",
        c"Off: a join reaches a pg_columnar table only through a scan that skips by constants alone (or an index). Results are the same either way.",
        &ENABLE_PARAMETERIZED_SCAN,
    );
    define_switch(
        c"pg_columnar.enable_subquery_values",
        c"Plan col IN (SELECT ...) on a pg_columnar column, over small tables, as col = ANY (ARRAY(SELECT ...)): an initplan whose values the scan skips and filters by.",
        c"Off: PostgreSQL's semi-join. Results are the same either way.",
        &ENABLE_SUBQUERY_VALUES,
    );
    // SAFETY: once per backend, from `_PG_init`, before any hook runs (this function's
    // contract): what each registration and hook installation asks
    unsafe {
        node::FRAME.register();
        plan::install_hook();
        subquery::install_hook();
        agg::install();
        topn::install();
        index_skip::FRAME.register();
    }
}

/// Whether a node's plan methods were registered ([`register_node`]).
pub struct Registration(std::sync::atomic::AtomicBool);

impl Registration {
    pub const fn new() -> Registration {
        Registration(std::sync::atomic::AtomicBool::new(false))
    }

    pub fn done(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Registers a custom node's plan methods under its name, unless a node of another library
/// has that name: PostgreSQL's registration raises an ERROR for a name taken, which while
/// `shared_preload_libraries` loads stops the server and otherwise keeps pg_columnar from
/// loading. Then the node stays off in this process, with a WARNING, and queries are planned
/// without it (the planner asks [`Registration::done`]).
///
/// # Safety
/// `methods` is a `static` method table with a NUL-terminated name (PostgreSQL keeps the
/// pointer); called once per table, in the postmaster or a backend, from `_PG_init`.
unsafe fn register_node(
    methods: *const pgrx::pg_sys::CustomScanMethods,
    registration: &Registration,
) {
    // SAFETY: `methods` is a static method table, with a NUL-terminated name (this function's
    // contract); the lookup only reads the registry of custom nodes
    let (name, taken) = unsafe {
        let name = (*methods).CustomName;
        (
            name,
            !pgrx::pg_sys::GetCustomScanMethods(name, true).is_null(),
        )
    };
    if taken {
        pgrx::warning!(
            "pg_columnar: another library has registered a custom node named \"{}\"; pg_columnar's is off in this process",
            // SAFETY: `name` is the table's NUL-terminated static name (this function's
            // contract)
            unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy()
        );
        return;
    }
    // SAFETY: `methods` is static, so it outlives the registry that keeps it, and its name is
    // not yet registered (checked above)
    unsafe { pgrx::pg_sys::RegisterCustomScanMethods(methods) };
    registration
        .0
        .store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Iterating PostgreSQL lists.
pub mod list {
    use pgrx::pg_sys;

    /// The number of elements of `l` (0 for NIL, the null list).
    ///
    /// # Safety
    /// `l` is null or a valid List.
    pub unsafe fn len(l: *const pg_sys::List) -> usize {
        if l.is_null() {
            0
        } else {
            // SAFETY: a non-null `l` is a valid List (this function's contract)
            unsafe { (*l).length as usize }
        }
    }

    /// The pointers held by a List of nodes.
    ///
    /// # Safety
    /// `l` is null or a valid List of pointers, neither freed nor changed while the iterator
    /// is used.
    pub unsafe fn ptrs<T>(l: *const pg_sys::List) -> impl Iterator<Item = *mut T> {
        // SAFETY: `l` is null or a valid List (this function's contract)
        let n = unsafe { len(l) };
        // SAFETY: `i` < `n`, the length of the List `l`, which stays valid and unchanged while
        // the iterator is used (this function's contract)
        (0..n).map(move |i| unsafe { (*(*l).elements.add(i)).ptr_value } as *mut T)
    }

    /// The nodes of a List of nodes.
    ///
    /// # Safety
    /// As [`ptrs`].
    pub unsafe fn nodes(l: *const pg_sys::List) -> impl Iterator<Item = *mut pg_sys::Node> {
        // SAFETY: this function's contract is `ptrs`'s
        unsafe { ptrs::<pg_sys::Node>(l) }
    }

    /// A new List of `items`, in the current memory context (NIL if there are none).
    ///
    /// # Safety
    /// In a backend; each item is a pointer the List may hold (a node, for a List of nodes).
    pub unsafe fn from_nodes(
        items: impl IntoIterator<Item = *mut pg_sys::Node>,
    ) -> *mut pg_sys::List {
        let mut l: *mut pg_sys::List = std::ptr::null_mut();
        for item in items {
            // SAFETY: in a backend (this function's contract); `l` is NIL or the List lappend
            // returned last, in the current memory context
            l = unsafe { pg_sys::lappend(l, item as *mut std::ffi::c_void) };
        }
        l
    }
}
