//! The GROUP BY keys of `PgcolAgg`: which expressions it groups by and how, decided at
//! plan time ([`key_spec`]), and the key parts of each vector's rows at execution
//! ([`KeyReader`]).
//!
//! A key is one of:
//! * a column of int2, int4, int8, date, timestamp, timestamptz or bool: its integers;
//! * a text or varchar column with a deterministic collation (where equality is bytewise):
//!   the codec's dense string ids, learnt once per dictionary and mapped from the codes;
//! * `date_trunc(unit, timestamptz)` for the session's TimeZone, `date_trunc(unit,
//!   timestamp)`, `date_bin(stride, ts, origin)`: the bucket in integer arithmetic
//!   (`codec::bucket`) where it is certainly PostgreSQL's; for any other value (infinities,
//!   the ends of the range) and for `date_trunc` of timestamptz in a zone whose offset
//!   changes, PostgreSQL's own function is evaluated on the value;
//! * any other expression of one such integer column with an integer result (the three
//!   argument `date_trunc`, `date_trunc` with an abbreviated unit, `tags_id % 10`), neither
//!   volatile nor holding a subquery or an executor parameter: evaluated by PostgreSQL on
//!   each value that differs from the row before.
//!
//! Only selected rows are evaluated, as PostgreSQL evaluates GROUP BY expressions only on
//! rows that pass WHERE.

use pg_columnar_codec::bucket::{self, TruncUnit};
use pg_columnar_codec::filter::Selection;
use std::rc::Rc;

use pg_columnar_codec::group::{int_keys, shared_ints, EntryMemo, Interner, KeyColumn, KeyParts};
use pg_columnar_codec::{ColumnContext, Form, Unpacked};
use pgrx::pg_sys;

use super::list;

/// How a key is computed (see the module's comment).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) enum KeySpec {
    Int {
        column: u16,
    },
    Text {
        column: u16,
    },
    /// `date_trunc(unit, column)`; `zoned`: of a timestamptz, in the session's TimeZone.
    Trunc {
        column: u16,
        unit: TruncUnit,
        zoned: bool,
    },
    /// `date_bin(stride, column, origin)`, stride in microseconds.
    Bin {
        column: u16,
        stride: i64,
        origin: i64,
    },
    Evaluated {
        column: u16,
    },
}

/// Types whose values are integers in the scan's vectors and whose equality is integer
/// equality.
fn is_integer_type(ty: pg_sys::Oid) -> bool {
    use pg_sys::{BOOLOID, DATEOID, INT2OID, INT4OID, INT8OID, TIMESTAMPOID, TIMESTAMPTZOID};
    [
        INT2OID,
        INT4OID,
        INT8OID,
        DATEOID,
        TIMESTAMPOID,
        TIMESTAMPTZOID,
        BOOLOID,
    ]
    .contains(&ty)
}

const F_TIMESTAMPTZ_TRUNC: u32 = 1217;
const F_TIMESTAMP_TRUNC: u32 = 2020;
const F_TIMESTAMP_BIN: u32 = 6177;
const F_TIMESTAMPTZ_BIN: u32 = 6178;

impl KeySpec {
    pub fn column(self) -> u16 {
        match self {
            KeySpec::Int { column }
            | KeySpec::Text { column }
            | KeySpec::Trunc { column, .. }
            | KeySpec::Bin { column, .. }
            | KeySpec::Evaluated { column } => column,
        }
    }

    /// What EXPLAIN calls the strategy.
    pub fn strategy(self) -> &'static str {
        match self {
            KeySpec::Int { .. } => "integers",
            KeySpec::Text { .. } => "dictionary codes",
            KeySpec::Trunc { .. } | KeySpec::Bin { .. } => "bucket arithmetic",
            KeySpec::Evaluated { .. } => "evaluated per value",
        }
    }
}

/// The column of `node` if it is a plain column of relation `relid`.
///
/// # Safety
///
/// `node` must be null or a valid expression node.
unsafe fn column_of(node: *mut pg_sys::Node, relid: pg_sys::Index, natts: usize) -> Option<u16> {
    // SAFETY: `node` is a valid node when not null (the contract; checked first).
    if node.is_null() || unsafe { (*node).type_ } != pg_sys::NodeTag::T_Var {
        return None;
    }
    let var = node as *mut pg_sys::Var;
    // SAFETY: the tag says `node` is a Var.
    unsafe {
        ((*var).varno as pg_sys::Index == relid
            && (*var).varlevelsup == 0
            && (*var).varattno >= 1
            && (*var).varattno as usize <= natts)
            .then(|| (*var).varattno as u16 - 1)
    }
}

/// A non-null Const of type `ty`.
///
/// # Safety
///
/// `node` must be null or a valid expression node.
unsafe fn constant(node: *mut pg_sys::Node, ty: pg_sys::Oid) -> Option<pg_sys::Datum> {
    // SAFETY: `node` is a valid node when not null (the contract; checked first).
    if node.is_null() || unsafe { (*node).type_ } != pg_sys::NodeTag::T_Const {
        return None;
    }
    let c = node as *mut pg_sys::Const;
    // SAFETY: the tag says `node` is a Const.
    unsafe { ((*c).consttype == ty && !(*c).constisnull).then_some((*c).constvalue) }
}

/// The bucket arithmetic for `f` (a FuncExpr over `column`), if it is one of the functions
/// computed here with constant arguments the arithmetic covers.
///
/// # Safety
///
/// `f` must be a valid FuncExpr of the query being planned, in a transaction.
unsafe fn bucket_spec(
    f: *mut pg_sys::FuncExpr,
    relid: pg_sys::Index,
    natts: usize,
) -> Option<KeySpec> {
    // SAFETY: `f` is a valid FuncExpr (the contract), whose args are a list of valid nodes.
    let (args, oid): (Vec<*mut pg_sys::Node>, u32) =
        unsafe { (list::nodes((*f).args).collect(), (*f).funcid.into()) };
    match (oid, args.as_slice()) {
        (F_TIMESTAMPTZ_TRUNC | F_TIMESTAMP_TRUNC, &[unit, ts]) => {
            // SAFETY: the args are valid nodes (the contract).
            let column = unsafe { column_of(ts, relid, natts) }?;
            // SAFETY: as above.
            let text = unsafe { constant(unit, pg_sys::TEXTOID) }?;
            // SAFETY: `text` is a non-NULL text Const's value; `text_to_cstring` returns a
            // palloc'd NUL-terminated copy, read at once.
            let name =
                unsafe { std::ffi::CStr::from_ptr(pg_sys::text_to_cstring(text.cast_mut_ptr())) };
            let unit = TruncUnit::parse(name.to_str().ok()?)?;
            Some(KeySpec::Trunc {
                column,
                unit,
                zoned: oid == F_TIMESTAMPTZ_TRUNC,
            })
        }
        (F_TIMESTAMP_BIN | F_TIMESTAMPTZ_BIN, &[stride, ts, origin]) => {
            // SAFETY: the args are valid nodes (the contract).
            let column = unsafe { column_of(ts, relid, natts) }?;
            // SAFETY: as above.
            let interval = unsafe { constant(stride, pg_sys::INTERVALOID) }?
                .cast_mut_ptr::<pg_sys::Interval>();
            let ty = if oid == F_TIMESTAMP_BIN {
                pg_sys::TIMESTAMPOID
            } else {
                pg_sys::TIMESTAMPTZOID
            };
            // SAFETY: as above.
            let origin = unsafe { constant(origin, ty) }?.value() as i64;
            // months are refused by PostgreSQL (an error, raised by evaluating); an infinite
            // interval has months set too
            // SAFETY: `interval` is a non-NULL interval Const's value: a valid `Interval`.
            let (month, day, time) =
                unsafe { ((*interval).month, (*interval).day, (*interval).time) };
            if month != 0 || !(0..1 << 20).contains(&day) || !(0..1 << 52).contains(&time) {
                return None;
            }
            let stride = day as i64 * bucket::USECS_PER_DAY + time;
            (stride > 0).then_some(KeySpec::Bin {
                column,
                stride,
                origin,
            })
        }
        _ => None,
    }
}

/// The spec of GROUP BY expression `expr` over relation `relid` (of `natts` attributes),
/// if computed here.
///
/// # Safety
///
/// `expr` must be a valid expression tree of the query being planned, in a transaction.
pub(super) unsafe fn key_spec(
    expr: *mut pg_sys::Node,
    relid: pg_sys::Index,
    natts: usize,
) -> Option<KeySpec> {
    // SAFETY: `expr` is a valid node (the contract).
    if let Some(column) = unsafe { column_of(expr, relid, natts) } {
        let var = expr as *mut pg_sys::Var;
        // SAFETY: `column_of` found `expr` to be a Var; the collation lookup is by a valid
        // oid (checked first), in a transaction (the contract).
        unsafe {
            if is_integer_type((*var).vartype) {
                return Some(KeySpec::Int { column });
            }
            let text = [pg_sys::TEXTOID, pg_sys::VARCHAROID].contains(&(*var).vartype);
            return (text
                && (*var).varcollid != pg_sys::InvalidOid
                && pg_sys::get_collation_isdeterministic((*var).varcollid))
            .then_some(KeySpec::Text { column });
        }
    }
    // an expression of one integer column with an integer result
    // SAFETY: `expr` is a valid expression tree (the contract), which the walkers only read.
    unsafe {
        if !is_integer_type(pg_sys::exprType(expr))
            || pg_sys::contain_volatile_functions(expr)
            || pg_sys::contain_subplans(expr)
            || !pg_sys::pull_paramids(expr as *mut pg_sys::Expr).is_null()
        {
            return None;
        }
    }
    // SAFETY: as above; `pull_var_clause` returns a new list of the tree's Vars.
    let vars = unsafe { pg_sys::pull_var_clause(expr, 0) };
    // SAFETY: `vars` is a valid list (or null, empty).
    if unsafe { list::len(vars) } != 1 {
        return None;
    }
    // SAFETY: `vars` holds one node, a Var of `expr`.
    let var = unsafe { list::nodes(vars).next() }.unwrap();
    // SAFETY: `var` is a valid node.
    let column = unsafe { column_of(var, relid, natts) }?;
    // SAFETY: `column_of` found `var` to be a Var.
    if !is_integer_type(unsafe { (*(var as *mut pg_sys::Var)).vartype }) {
        return None;
    }
    // SAFETY: `expr` is a valid node (the contract), a FuncExpr when its tag says so.
    unsafe {
        if (*expr).type_ == pg_sys::NodeTag::T_FuncExpr {
            if let Some(spec) = bucket_spec(expr as *mut pg_sys::FuncExpr, relid, natts) {
                return Some(spec);
            }
        }
    }
    Some(KeySpec::Evaluated { column })
}

/// PostgreSQL evaluating a key expression on one column's values.
struct Evaluator {
    state: *mut pg_sys::ExprState,
    econtext: *mut pg_sys::ExprContext,
    /// A virtual slot of the relation's descriptor: the column's value, NULL elsewhere.
    slot: *mut pg_sys::TupleTableSlot,
    attno: usize,
    calls: u64,
}

impl Evaluator {
    /// The result of the expression (as the raw Datum of its by-value integer type) for
    /// the column's value `v`, and whether it is NULL.
    ///
    /// # Safety
    ///
    /// The evaluator's state, expression context and slot, made by [`KeyReader::new`], must
    /// still be live: its query runs and [`KeyReader::end`] has not dropped the slot.
    unsafe fn eval(&mut self, v: i64) -> (i64, bool) {
        self.calls += 1;
        let slot = self.slot;
        // SAFETY: the slot, context and state are live (the contract); the slot's arrays have
        // `natts` entries, and `attno` is a column of its descriptor (the key's relation's).
        unsafe {
            pg_sys::ExecClearTuple(slot);
            let natts = (*(*slot).tts_tupleDescriptor).natts as usize;
            std::slice::from_raw_parts_mut((*slot).tts_isnull, natts).fill(true);
            *(*slot).tts_values.add(self.attno) = pg_sys::Datum::from(v);
            *(*slot).tts_isnull.add(self.attno) = false;
            pg_sys::ExecStoreVirtualTuple(slot);
            (*self.econtext).ecxt_scantuple = slot;
            let mut isnull = false;
            let d = pg_sys::ExecEvalExprSwitchContext(self.state, self.econtext, &mut isnull);
            (d.value() as i64, isnull)
        }
    }
}

/// The buckets of a dictionary's entries: by arithmetic where it answers (`answered`),
/// by PostgreSQL for the others, evaluated once each when a selected row first holds one.
struct EntryBuckets {
    /// The dictionary's key for a shared one (kept across its vectors); `None` for a
    /// vector's own.
    key: Option<u64>,
    arithmetic: Rc<[i64]>,
    answered: Vec<bool>,
    /// Whether arithmetic answered every entry (no row needs a look at `answered`).
    all_answered: bool,
    evaluated: Vec<Option<(i64, bool)>>,
}

/// The key of column value `v` under `spec` (an integer column's own value, or a bucket by
/// arithmetic) with the session zone's fixed offset `gmtoff`, if arithmetic gives it.
fn key_by_arithmetic(spec: KeySpec, gmtoff: Option<i64>, v: i64) -> Option<i64> {
    match (spec, gmtoff) {
        (KeySpec::Int { .. }, _) => Some(v),
        (
            KeySpec::Trunc {
                unit, zoned: false, ..
            },
            _,
        ) => bucket::trunc(unit, v),
        (
            KeySpec::Trunc {
                unit, zoned: true, ..
            },
            Some(off),
        ) => bucket::trunc_at_offset(unit, v, off),
        (KeySpec::Bin { stride, origin, .. }, _) => bucket::bin(stride, v, origin),
        _ => None,
    }
}

/// Reads the key parts of one key for each vector.
pub(super) struct KeyReader {
    pub spec: KeySpec,
    interner: Option<Interner>,
    evaluator: Option<Evaluator>,
    /// The session zone's fixed offset (seconds east of UTC), for `date_trunc` of a
    /// timestamptz; `None` if the zone's offset changes.
    gmtoff: Option<i64>,
    /// The entries of the last shared dictionary, as integers.
    entries: EntryMemo<[i64]>,
    buckets: Option<EntryBuckets>,
}

impl KeyReader {
    /// A reader for `spec`, whose expression is `expr` (evaluated in `parent`'s executor
    /// state when arithmetic does not answer), over rows of descriptor `desc`.
    ///
    /// # Safety
    ///
    /// `expr` must be the key's valid expression, `parent` the plan state being initialized
    /// (with its executor state), and `desc` the scanned relation's descriptor, valid for the
    /// query; called in the query's memory context. [`end`](Self::end) frees what it made.
    pub unsafe fn new(
        spec: KeySpec,
        expr: *mut pg_sys::Expr,
        parent: *mut pg_sys::PlanState,
        desc: pg_sys::TupleDesc,
    ) -> KeyReader {
        let evaluator = match spec {
            KeySpec::Int { .. } | KeySpec::Text { .. } => None,
            // SAFETY: `expr`, `parent` (with its estate) and `desc` are valid, in the query's
            // memory context (the contract), where the state, context and slot are made.
            _ => Some(unsafe {
                Evaluator {
                    state: pg_sys::ExecInitExpr(expr, parent),
                    econtext: pg_sys::CreateExprContext((*parent).state),
                    slot: pg_sys::MakeSingleTupleTableSlot(desc, &pg_sys::TTSOpsVirtual),
                    attno: spec.column() as usize,
                    calls: 0,
                }
            }),
        };
        let gmtoff = match spec {
            KeySpec::Trunc { zoned: true, .. } => {
                let mut off: std::ffi::c_long = 0;
                // SAFETY: `session_timezone` is the backend's setting, read in its one thread;
                // `off` is a live local.
                unsafe { pg_sys::pg_get_timezone_offset(pg_sys::session_timezone, &mut off) }
                    .then_some(off as i64)
            }
            _ => Some(0),
        };
        let interner = matches!(spec, KeySpec::Text { .. }).then(Interner::new);
        KeyReader {
            spec,
            interner,
            evaluator,
            gmtoff,
            entries: EntryMemo::default(),
            buckets: None,
        }
    }

    pub(super) fn interner(&self) -> Option<&Interner> {
        self.interner.as_ref()
    }

    /// The key part this reader gives the string `s` (its id; interned now if new), for a
    /// reader of strings; `None` for another.
    pub(super) fn part_of_string(&mut self, s: &[u8]) -> Option<i64> {
        self.interner.as_mut().map(|i| i.id(s) as i64)
    }

    /// For a reader of strings: takes `other` (a new one for `None`) as the interner whose ids
    /// its keys are, from the next vector on, and returns its own; for another reader,
    /// returns `other`. Readers that hand one interner on give their keys the same ids.
    pub(super) fn exchange_interner(&mut self, other: Option<Interner>) -> Option<Interner> {
        if self.interner.is_none() {
            return other;
        }
        self.interner.replace(other.unwrap_or_else(Interner::new))
    }

    /// How many values PostgreSQL evaluated.
    pub(super) fn evaluated(&self) -> u64 {
        self.evaluator.as_ref().map_or(0, |e| e.calls)
    }

    /// Whether the key never decreases as its column's value grows (a column, a bucket in
    /// arithmetic; not a zone whose offset changes, not an evaluated expression).
    pub(super) fn monotone(&self) -> bool {
        match self.spec {
            KeySpec::Int { .. } | KeySpec::Bin { .. } | KeySpec::Trunc { zoned: false, .. } => true,
            KeySpec::Trunc { zoned: true, .. } => self.gmtoff.is_some(),
            KeySpec::Text { .. } | KeySpec::Evaluated { .. } => false,
        }
    }

    /// The key of column value `v` for a [`monotone`](Self::monotone) key, if arithmetic
    /// gives it.
    pub(super) fn key_of(&self, v: i64) -> Option<i64> {
        key_by_arithmetic(self.spec, self.gmtoff, v)
    }

    /// [`key_of`](Self::key_of) as a function that outlives the reader.
    pub(super) fn key_function(&self) -> impl Fn(i64) -> Option<i64> + 'static {
        let (spec, gmtoff) = (self.spec, self.gmtoff);
        move |v| key_by_arithmetic(spec, gmtoff, v)
    }

    /// The bucket of `v` by arithmetic, if it answers.
    fn arithmetic(&self, v: i64) -> Option<i64> {
        match self.spec {
            KeySpec::Int { .. } => None,
            _ => key_by_arithmetic(self.spec, self.gmtoff, v),
        }
    }

    /// The key parts of the rows of `u` (its selected rows; the others are unspecified);
    /// `None` if the vector's values are not of the key's kind. `dictionary_key` names the
    /// shared dictionary of `ctx`.
    ///
    /// # Safety
    ///
    /// The reader's query must still run, and [`end`](Self::end) not have been called (an
    /// evaluated key uses what [`new`](Self::new) made).
    pub unsafe fn read(
        &mut self,
        u: &Unpacked,
        ctx: &ColumnContext<'_>,
        selection: &Selection,
        dictionary_key: u64,
    ) -> Option<KeyColumn> {
        if let Some(interner) = self.interner.as_mut() {
            return interner.keys(u, ctx, dictionary_key);
        }
        let keys = int_keys(u, ctx, &mut self.entries, dictionary_key)?;
        if matches!(self.spec, KeySpec::Int { .. }) {
            return Some(keys);
        }
        let shared = matches!(u.form, Form::Codes { inline: None, .. });
        Some(match keys.parts {
            // SAFETY: the reader is live (this fn's contract, the same as these).
            KeyParts::Coded { codes, entries } => unsafe {
                self.coded_buckets(
                    codes,
                    &entries,
                    keys.nulls,
                    selection,
                    shared.then_some(dictionary_key),
                )
            },
            // SAFETY: as above.
            KeyParts::Rows(parts) => unsafe {
                self.row_buckets(parts, keys.nulls, selection, u.rows)
            },
        })
    }

    /// Buckets of a dictionary vector: each entry's once (for a shared dictionary, once per
    /// stripe), the codes kept, unless a selected row holds an entry only PostgreSQL can
    /// bucket, when the vector's rows get their parts one by one.
    ///
    /// # Safety
    ///
    /// As [`read`](Self::read): the reader is live.
    unsafe fn coded_buckets(
        &mut self,
        codes: Vec<u32>,
        entries: &[i64],
        nulls: Option<Vec<u8>>,
        selection: &Selection,
        key: Option<u64>,
    ) -> KeyColumn {
        let mut b = match self.buckets.take() {
            Some(b) if key.is_some() && b.key == key => b,
            _ => {
                let answers: Vec<Option<i64>> =
                    entries.iter().map(|&v| self.arithmetic(v)).collect();
                EntryBuckets {
                    key,
                    arithmetic: answers.iter().map(|a| a.unwrap_or(0)).collect(),
                    answered: answers.iter().map(Option::is_some).collect(),
                    all_answered: answers.iter().all(Option::is_some),
                    evaluated: vec![None; entries.len()],
                }
            }
        };
        let is_null = |r: usize| nulls.as_ref().is_some_and(|n| n[r / 8] >> (r % 8) & 1 == 1);
        let column = if b.all_answered
            || selection
                .iter()
                .all(|r| is_null(r) || b.answered[codes[r] as usize])
        {
            KeyColumn {
                parts: KeyParts::Coded {
                    codes,
                    entries: b.arithmetic.clone(),
                },
                nulls,
            }
        } else {
            let evaluator = self.evaluator.as_mut().unwrap();
            let mut parts = vec![0; codes.len()];
            let mut result_nulls = nulls
                .clone()
                .unwrap_or_else(|| vec![0; codes.len().div_ceil(8)]);
            for r in selection.iter() {
                if is_null(r) {
                    continue;
                }
                let c = codes[r] as usize;
                let (part, null) = if b.answered[c] {
                    (b.arithmetic[c], false)
                } else {
                    // SAFETY: the reader is live (this fn's contract), so its evaluator is.
                    *b.evaluated[c].get_or_insert_with(|| unsafe { evaluator.eval(entries[c]) })
                };
                parts[r] = part;
                if null {
                    result_nulls[r / 8] |= 1 << (r % 8);
                }
            }
            let any_null = result_nulls.iter().any(|&x| x != 0);
            KeyColumn {
                parts: KeyParts::Rows(parts),
                nulls: any_null.then_some(result_nulls),
            }
        };
        self.buckets = Some(b);
        column
    }

    /// Buckets of rows one by one (a run of one value bucketed once).
    ///
    /// # Safety
    ///
    /// As [`read`](Self::read): the reader is live.
    unsafe fn row_buckets(
        &mut self,
        mut parts: Vec<i64>,
        nulls: Option<Vec<u8>>,
        selection: &Selection,
        rows: usize,
    ) -> KeyColumn {
        let mut result_nulls: Option<Vec<u8>> = None;
        let mut last: Option<(i64, (i64, bool))> = None;
        // the values of the last bucket computed in arithmetic, for buckets of one width: rows
        // in time order (a sorted stripe's host runs) compute one bucket per bucket, not per row
        let width = match self.spec {
            KeySpec::Trunc { unit, .. } => unit.fixed_width(),
            KeySpec::Bin { stride, .. } => Some(stride),
            _ => None,
        };
        let mut span: Option<(i64, i64, i64)> = None;
        for r in selection.iter() {
            if nulls.as_ref().is_some_and(|n| n[r / 8] >> (r % 8) & 1 == 1) {
                continue;
            }
            let v = parts[r];
            if let Some((lo, hi, b)) = span {
                if lo <= v && v < hi {
                    parts[r] = b;
                    continue;
                }
            }
            let (part, null) = match last {
                Some((input, out)) if input == v => out,
                _ => {
                    let out = match self.arithmetic(v) {
                        Some(b) => {
                            if let Some(width) = width {
                                let (lo, hi) = bucket::span(b, width);
                                span = Some((lo, hi, b));
                            }
                            (b, false)
                        }
                        // SAFETY: the reader is live (this fn's contract), so its evaluator is.
                        None => unsafe { self.evaluator.as_mut().unwrap().eval(v) },
                    };
                    last = Some((v, out));
                    out
                }
            };
            parts[r] = part;
            if null {
                let bitmap = result_nulls.get_or_insert_with(|| {
                    nulls.clone().unwrap_or_else(|| vec![0; rows.div_ceil(8)])
                });
                bitmap[r / 8] |= 1 << (r % 8);
            }
        }
        KeyColumn {
            parts: KeyParts::Rows(parts),
            nulls: result_nulls.or(nulls),
        }
    }

    /// The key of each entry of `ctx`'s shared dictionary (named by `dictionary_key` as in
    /// [`read`](Self::read)), for a key that is a column; `None` for other keys, or if
    /// there is no shared dictionary or its values are not of the key's kind.
    pub(super) fn shared_entries(
        &mut self,
        ctx: &ColumnContext<'_>,
        dictionary_key: u64,
    ) -> Option<Rc<[i64]>> {
        match (self.spec, self.interner.as_mut()) {
            (KeySpec::Text { .. }, Some(interner)) => interner.shared_ids(ctx, dictionary_key),
            (KeySpec::Int { .. }, _) => shared_ints(ctx, &mut self.entries, dictionary_key),
            _ => None,
        }
    }

    /// Frees what evaluating needed (the executor frees the expression state and the
    /// expression context with the query).
    ///
    /// # Safety
    ///
    /// Called before the query's memory, where [`new`](Self::new) made the slot, is freed.
    pub unsafe fn end(&mut self) {
        if let Some(e) = self.evaluator.take() {
            // SAFETY: the slot was made by `new`, is dropped once (the evaluator is taken),
            // and its memory still exists (the contract).
            unsafe { pg_sys::ExecDropSingleTupleTableSlot(e.slot) };
        }
    }

    /// Frees the memory of the values evaluated so far (the results are by-value integers).
    ///
    /// # Safety
    ///
    /// The reader's query must still run (its expression context exists).
    pub(super) unsafe fn reset_memory(&mut self) {
        if let Some(e) = &self.evaluator {
            // SAFETY: the expression context `new` made lives as long as the query (the
            // contract); no value evaluated in it is kept (by-value integers).
            unsafe { pg_sys::MemoryContextReset((*e.econtext).ecxt_per_tuple_memory) };
        }
    }
}
