//! First rows handed from one partition of a DISTINCT ON to the partitions that run after it.
//!
//! Under `DISTINCT ON (g) ... ORDER BY g, o` over a partitioned table (`topn::partitions_path`),
//! PostgreSQL's Sort and Unique keep each group's first row among the rows every partition
//! returns. A row of a partition that comes after another partition's returned row of its
//! group can never be kept, so a partition need not find it. The partitions of one DISTINCT
//! ON share a *set* of rows, as (group key, order value): PgcolIndexSkip records each row
//! it returns; a PgcolTopN about to compute takes the set's rows as its groups' rows so far,
//! so that its stripes and vectors whose zone maps cannot beat them are left out, unread,
//! returns only rows that beat them, and puts back the better of each group's row taken and
//! its own. The Append runs the partitions one after the other, in the order's
//! direction (`topn::partitions_path`), so under a range partitioning by `o` the partitions
//! that hold each group's first row run first.
//!
//! Correct because every row in a set is one some member returns in the same pass: a set's
//! rows are forgotten when any member is rescanned (before the member computes again, so a
//! pass never sees the rows of the one before), and a member adds only rows it returns (a
//! PgcolTopN puts back rows it took and its own). A row tied with a recorded one is left
//! out too: either is a valid first row.
//!
//! A set also holds the string ids its PgcolTopN nodes share (one `Interner`, handed from
//! node to node), so that a partition's dictionaries of the same hosts are found, not
//! interned again, and its rows' keys are ids.
//!
//! A set lives in the query's memory context: its rows are dropped with it.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use pg_columnar_codec::group::Interner;
use pgrx::pg_sys;

/// A group's key as every member of a set reads it: an integer column's value (of the types
/// `group::KeySpec::Int` groups), a string's bytes (`KeySpec::Text`), or a string's id in
/// the set's interner; `None`: NULL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum GroupKey {
    Int(i64),
    Bytes(Box<[u8]>),
    Interned(u32),
}

/// A row a member returns: its group and its value of the ordering column (`None`: NULL).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Seed {
    pub group: Option<GroupKey>,
    pub value: Option<i64>,
}

/// A set's rows, and the interner of the ids among their keys (`None` while a member holds
/// it, or before one has made it).
#[derive(Default)]
pub(super) struct Rows {
    pub rows: Vec<Seed>,
    pub interner: Option<Interner>,
}

/// The sets of the running queries, by (query memory context, set number).
type Sets = HashMap<(usize, u32), Rows>;

thread_local! {
    static SETS: RefCell<Sets> = RefCell::new(HashMap::new());
    /// The query memory contexts with a reset callback that drops their sets.
    static WATCHED: RefCell<HashSet<usize>> = RefCell::new(HashSet::new());
}

/// A member's handle on its set.
#[derive(Debug, Clone, Copy)]
pub(super) struct SeedSet {
    memory: pg_sys::MemoryContext,
    set: u32,
}

/// A number for a new set, unique among the sets of the plans of this backend for 2³² − 1
/// plans (0 is no set).
pub(super) fn new_set_number() -> u32 {
    thread_local! {
        static NEXT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    NEXT.with(|n| {
        let next = n.get().wrapping_add(1).max(1);
        n.set(next);
        next
    })
}

impl SeedSet {
    /// The handle on set `set` (`None` for 0, no set) of the query whose executor state is
    /// `estate`.
    ///
    /// # Safety
    /// `estate` is a valid executor state.
    pub unsafe fn of(estate: *mut pg_sys::EState, set: u32) -> Option<SeedSet> {
        // SAFETY: a valid executor state (this function's contract)
        let memory = unsafe { (*estate).es_query_cxt };
        (set != 0).then_some(SeedSet { memory, set })
    }

    fn key(&self) -> (usize, u32) {
        (self.memory as usize, self.set)
    }

    /// Forgets the set's rows (a member is rescanned: a new pass begins).
    pub fn clear(&self) {
        SETS.with(|s| s.borrow_mut().remove(&self.key()));
    }

    /// Records rows a member returns, up to [`capacity`] rows in the set (the rest are not
    /// recorded: fewer rows only leave fewer stripes out).
    ///
    /// # Safety
    /// The handle's query memory context is live (the member runs in its query).
    pub unsafe fn add(&self, seeds: impl IntoIterator<Item = Seed>) {
        // SAFETY: as this function's
        unsafe { self.watch() };
        let cap = capacity();
        SETS.with(|s| {
            let mut sets = s.borrow_mut();
            let rows = &mut sets.entry(self.key()).or_default().rows;
            let room = cap.saturating_sub(rows.len());
            rows.extend(seeds.into_iter().take(room));
        });
    }

    /// Takes the set's rows and interner out (a PgcolTopN about to compute), to be put back
    /// by [`SeedSet::put`].
    pub fn take(&self) -> Rows {
        SETS.with(|s| s.borrow_mut().remove(&self.key()).unwrap_or_default())
    }

    /// Puts back what [`SeedSet::take`] took, its rows replaced, at most [`capacity`] of them.
    ///
    /// # Safety
    /// As [`SeedSet::add`]'s.
    pub unsafe fn put(&self, mut rows: Rows) {
        // SAFETY: as this function's
        unsafe { self.watch() };
        rows.rows.truncate(capacity());
        SETS.with(|s| s.borrow_mut().insert(self.key(), rows));
    }

    /// Registers, once per query memory context, the callback that drops its sets.
    ///
    /// # Safety
    /// As [`SeedSet::add`]'s.
    unsafe fn watch(&self) {
        let memory = self.memory as usize;
        let watched = WATCHED.with(|w| w.borrow().contains(&memory));
        if !watched {
            // SAFETY: the context is live (this function's contract); the callback is
            // allocated in it, so it lives as long as the context it is registered with
            unsafe {
                let cb = pg_sys::MemoryContextAlloc(
                    self.memory,
                    std::mem::size_of::<pg_sys::MemoryContextCallback>(),
                ) as *mut pg_sys::MemoryContextCallback;
                (*cb).func = Some(forget_context);
                (*cb).arg = self.memory as *mut std::ffi::c_void;
                (*cb).next = std::ptr::null_mut();
                pg_sys::MemoryContextRegisterResetCallback(self.memory, cb);
            }
            WATCHED.with(|w| w.borrow_mut().insert(memory));
        }
    }
}

/// The most rows a set holds: half the groups a PgcolTopN may keep (`agg::BYTES_PER_FIRST_ROW`
/// each in 16 times the hash memory), so that taking them at most adds half to its memory,
/// and the rows in the registry, outside PostgreSQL's memory accounting, stay as bounded.
/// (Its interner holds the strings of the dictionaries the nodes read, as each node's own
/// would.)
fn capacity() -> usize {
    (super::agg::group_memory_limit() as f64 / super::agg::BYTES_PER_FIRST_ROW / 2.0) as usize
}

/// The reset callback of a query memory context: drops its sets.
///
/// # Safety
/// PostgreSQL's contract: `arg` is what `SeedSet::add` registered, the context's address.
unsafe extern "C-unwind" fn forget_context(arg: *mut std::ffi::c_void) {
    let memory = arg as usize;
    // `try_borrow_mut`: a reset never runs while a set is borrowed (nothing here calls into
    // PostgreSQL then), but a callback must not panic
    SETS.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            s.retain(|&(m, _), _| m != memory);
        }
    });
    WATCHED.with(|w| {
        if let Ok(mut w) = w.try_borrow_mut() {
            w.remove(&memory);
        }
    });
}

/// How a member reads a column of a set's rows from a Datum: the types `group::KeySpec`
/// reads as integers, and text and varchar as their bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum DatumKind {
    Int { len: i16 },
    Bytes,
}

impl DatumKind {
    /// The kind of a column of type `ty`, if rows of it can be recorded.
    pub fn of_type(ty: pg_sys::Oid) -> Option<DatumKind> {
        use pg_sys::{
            BOOLOID, DATEOID, INT2OID, INT4OID, INT8OID, TEXTOID, TIMESTAMPOID, TIMESTAMPTZOID,
            VARCHAROID,
        };
        Some(match ty {
            BOOLOID => DatumKind::Int { len: 1 },
            INT2OID => DatumKind::Int { len: 2 },
            INT4OID | DATEOID => DatumKind::Int { len: 4 },
            INT8OID | TIMESTAMPOID | TIMESTAMPTZOID => DatumKind::Int { len: 8 },
            TEXTOID | VARCHAROID => DatumKind::Bytes,
            _ => return None,
        })
    }

    /// The key of a non-NULL Datum of this kind.
    ///
    /// # Safety
    /// `d` is a valid Datum of a type of this kind; a detoasted copy is made in the current
    /// memory context.
    pub unsafe fn key(self, d: pg_sys::Datum) -> GroupKey {
        match self {
            DatumKind::Int { len } => GroupKey::Int(Self::int(len, d)),
            // SAFETY: a valid text or varchar Datum (this function's contract), detoasted into
            // memory of the current context, read at once
            DatumKind::Bytes => unsafe {
                let v = pg_sys::pg_detoast_datum_packed(d.cast_mut_ptr());
                let bytes = std::slice::from_raw_parts(
                    pgrx::varlena::vardata_any(v) as *const u8,
                    pgrx::varlena::varsize_any_exhdr(v),
                );
                GroupKey::Bytes(bytes.into())
            },
        }
    }

    /// The integer of a non-NULL Datum of an integer kind (`None` for bytes).
    pub fn value(self, d: pg_sys::Datum) -> Option<i64> {
        match self {
            DatumKind::Int { len } => Some(Self::int(len, d)),
            DatumKind::Bytes => None,
        }
    }

    /// The Datum of integer `v` of a type of `len` bytes (as [`DatumKind::value`] reads it).
    pub fn int_datum(len: i16, v: i64) -> pg_sys::Datum {
        match len {
            1 => pg_sys::Datum::from(v != 0),
            2 => pg_sys::Datum::from(v as i16),
            4 => pg_sys::Datum::from(v as i32),
            _ => pg_sys::Datum::from(v),
        }
    }

    fn int(len: i16, d: pg_sys::Datum) -> i64 {
        let raw = d.value() as u64;
        match len {
            // as the table stores them (`am::datum`): bool as a byte
            1 => raw as u8 as i8 as i64,
            2 => raw as u16 as i16 as i64,
            4 => raw as u32 as i32 as i64,
            _ => raw as i64,
        }
    }
}
