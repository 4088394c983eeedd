//! Table options of pg_columnar tables: `pg_columnar.sort_key`, set with
//! `CREATE TABLE ... WITH (pg_columnar.sort_key = 'a, b')` or `ALTER TABLE ... SET (...)` and
//! removed with `ALTER TABLE ... RESET (pg_columnar.sort_key)`.
//!
//! PostgreSQL validates storage parameters against heap's list and has no hook for a table
//! access method's own, so the utility hook takes these out of the statement before
//! PostgreSQL sees it and writes them into `pg_class.reloptions` itself, as
//! `pg_columnar.sort_key=a, b`. There they show in `\d+`, `pg_dump` writes them back into
//! the CREATE TABLE it emits (restored through this same hook), and a rewrite (VACUUM FULL,
//! CLUSTER, ALTER COLUMN TYPE, SET ACCESS METHOD) copies them to the new relation.
//! PostgreSQL reads reloptions it does not know without complaint, but refuses them when it
//! validates the table's options again (another `ALTER TABLE ... SET`): for such a statement
//! the option is taken out of `pg_class` while PostgreSQL runs it and put back after.
//!
//! The key is stored by column names; a statement that renames a key column gets it
//! renamed in the key, one that drops a key column (or changes it to a type the writer
//! cannot sort by) takes it out of the key, with a NOTICE.

use std::ffi::{CStr, CString};

use pgrx::pg_sys;
use pgrx::PgSqlErrorCode::{
    ERRCODE_DATATYPE_MISMATCH, ERRCODE_INVALID_PARAMETER_VALUE, ERRCODE_UNDEFINED_COLUMN,
    ERRCODE_WRONG_OBJECT_TYPE,
};

use super::relation::is_columnar;

/// The option's namespace and name, and how `pg_class.reloptions` holds it.
const NAMESPACE: &str = "pg_columnar";
const STORED_NAME: &str = "pg_columnar.sort_key";

/// One of our options named in a statement: `Some(value)` to set, `None` to reset.
type Change = Option<String>;

/// Whether `def` names one of our options, and which (an unknown name in our namespace is
/// an error, as PostgreSQL's own parameters are).
///
/// # Safety
///
/// `def` is a valid DefElem of a parse tree.
unsafe fn our_option(def: *mut pg_sys::DefElem) -> Option<()> {
    // SAFETY: `def` is a valid DefElem (this function's contract), whose name is a
    // NUL-terminated string and whose namespace is null or one
    let (name, namespace) = unsafe {
        let name = CStr::from_ptr((*def).defname).to_string_lossy();
        let namespace = (!(*def).defnamespace.is_null()).then(|| {
            CStr::from_ptr((*def).defnamespace)
                .to_string_lossy()
                .into_owned()
        });
        (name, namespace)
    };
    let full = match namespace {
        Some(ns) if ns == NAMESPACE => format!("{ns}.{name}"),
        Some(_) => return None,
        // pg_dump writes the stored name back as one quoted identifier
        None if name.starts_with("pg_columnar.") => name.into_owned(),
        None => return None,
    };
    if full != STORED_NAME {
        pgrx::ereport!(
            ERROR,
            ERRCODE_INVALID_PARAMETER_VALUE,
            format!("unrecognized parameter \"{full}\""),
            "pg_columnar's table option is pg_columnar.sort_key."
        );
    }
    Some(())
}

/// Takes our options out of `list` (a `List *` of DefElem, changed in place); the last one
/// named wins.
///
/// # Safety
///
/// `*list` is null or a valid `List *` of DefElem, which the caller may change.
unsafe fn take_ours(list: &mut *mut pg_sys::List, reset: bool) -> Option<Change> {
    let mut found = None;
    let mut kept = std::ptr::null_mut();
    // SAFETY: `*list` is null or a valid list of DefElem (this function's contract); the
    // elements kept are appended to a new list in the current memory context
    unsafe {
        for def in pgrx::PgList::<pg_sys::DefElem>::from_pg(*list).iter_ptr() {
            if our_option(def).is_some() {
                found = Some(if reset { None } else { Some(def_value(def)) });
            } else {
                kept = pg_sys::lappend(kept, def as *mut std::ffi::c_void);
            }
        }
    }
    *list = kept;
    found
}

/// The value of option `def`, as a string.
///
/// # Safety
///
/// `def` is a valid DefElem of a parse tree.
unsafe fn def_value(def: *mut pg_sys::DefElem) -> String {
    // SAFETY: `def` is a valid DefElem (this function's contract)
    if unsafe { (*def).arg }.is_null() {
        pgrx::ereport!(
            ERROR,
            ERRCODE_INVALID_PARAMETER_VALUE,
            "pg_columnar.sort_key needs a value: the key's columns, as in 'hostname, time'"
        );
    }
    // SAFETY: `def` is a valid DefElem (this function's contract) with an argument (checked
    // above), whose string form defGetString returns NUL-terminated
    unsafe { CStr::from_ptr(pg_sys::defGetString(def)) }
        .to_string_lossy()
        .into_owned()
}

/// The options in `pg_class.reloptions` of `relid`, as (name, value).
///
/// # Safety
///
/// Called in a transaction, as the catalog reads (and writes) need.
unsafe fn stored(relid: pg_sys::Oid) -> Vec<(String, String)> {
    // SAFETY: a syscache lookup in a transaction (this function's contract), released below;
    // the options are copied out (into DefElems of the current context, then Strings) first
    unsafe {
        let tuple = pg_sys::SearchSysCache1(
            pg_sys::SysCacheIdentifier::RELOID as i32,
            pg_sys::Datum::from(relid),
        );
        if tuple.is_null() {
            return Vec::new();
        }
        let mut isnull = false;
        let datum = pg_sys::SysCacheGetAttr(
            pg_sys::SysCacheIdentifier::RELOID as i32,
            tuple,
            pg_sys::Anum_pg_class_reloptions as pg_sys::AttrNumber,
            &mut isnull,
        );
        let out = if isnull {
            Vec::new()
        } else {
            pgrx::PgList::<pg_sys::DefElem>::from_pg(pg_sys::untransformRelOptions(datum))
                .iter_ptr()
                .map(|d| {
                    (
                        CStr::from_ptr((*d).defname).to_string_lossy().into_owned(),
                        CStr::from_ptr(pg_sys::defGetString(d))
                            .to_string_lossy()
                            .into_owned(),
                    )
                })
                .collect()
        };
        pg_sys::ReleaseSysCache(tuple);
        out
    }
}

/// Writes `options` as `pg_class.reloptions` of `relid` (NULL if none), visible to the
/// rest of the statement.
///
/// # Safety
///
/// Called in a transaction that may write the catalogs, with `relid` locked against
/// concurrent changes of its options (as the statement being run locks it).
unsafe fn store(relid: pg_sys::Oid, options: &[(String, String)]) {
    // SAFETY: in a transaction (this function's contract); `pg_class` is closed below, and the
    // tuple is a copy, freed below
    let (class, tuple) = unsafe {
        let class = pg_sys::table_open(
            pg_sys::RelationRelationId,
            pg_sys::RowExclusiveLock as pg_sys::LOCKMODE,
        );
        let tuple = pg_sys::SearchSysCacheCopy(
            pg_sys::SysCacheIdentifier::RELOID as i32,
            pg_sys::Datum::from(relid),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
            pg_sys::Datum::from(0),
        );
        (class, tuple)
    };
    if tuple.is_null() {
        pgrx::error!(
            "pg_columnar: cache lookup failed for relation {}",
            u32::from(relid)
        );
    }
    let natts = pg_sys::Natts_pg_class as usize;
    let mut values = vec![pg_sys::Datum::from(0); natts];
    let mut nulls = vec![false; natts];
    let mut replace = vec![false; natts];
    let at = pg_sys::Anum_pg_class_reloptions as usize - 1;
    replace[at] = true;
    if options.is_empty() {
        nulls[at] = true;
    } else {
        let mut elems: Vec<pg_sys::Datum> = options
            .iter()
            .map(|(n, v)| {
                let s = CString::new(format!("{n}={v}")).expect("no NUL in an option");
                // SAFETY: `s` is NUL-terminated; the text is a palloc'd copy
                pg_sys::Datum::from(unsafe { pg_sys::cstring_to_text(s.as_ptr()) })
            })
            .collect();
        // SAFETY: `elems` holds `elems.len()` text Datums, as the element type says
        let array = unsafe {
            pg_sys::construct_array(
                elems.as_mut_ptr(),
                elems.len() as i32,
                pg_sys::TEXTOID,
                -1,
                false,
                pg_sys::TYPALIGN_INT as std::ffi::c_char,
            )
        };
        values[at] = pg_sys::Datum::from(array);
    }
    // SAFETY: `tuple` is a (non-null) copy of the pg_class row, `class` is pg_class, open,
    // and the three arrays have its `Natts_pg_class` entries; each copy is freed once
    unsafe {
        let new = pg_sys::heap_modify_tuple(
            tuple,
            (*class).rd_att,
            values.as_mut_ptr(),
            nulls.as_mut_ptr(),
            replace.as_mut_ptr(),
        );
        pg_sys::CatalogTupleUpdate(class, &mut (*new).t_self, new);
        pg_sys::heap_freetuple(new);
        pg_sys::heap_freetuple(tuple);
        pg_sys::table_close(class, pg_sys::RowExclusiveLock as pg_sys::LOCKMODE);
        pg_sys::CommandCounterIncrement();
    }
}

/// The stored sort key of `relid`, as written (`None`: none).
///
/// # Safety
///
/// Called in a transaction, as the catalog reads (and writes) need.
unsafe fn stored_key(relid: pg_sys::Oid) -> Option<String> {
    // SAFETY: in a transaction (this function's contract)
    unsafe { stored(relid) }
        .into_iter()
        .find(|(n, _)| n == STORED_NAME)
        .map(|(_, v)| v)
}

/// Sets (`Some`) or removes the stored sort key of `relid`, keeping its other options.
///
/// # Safety
///
/// As [`store`]: in a transaction that may write the catalogs, `relid` locked.
unsafe fn store_key(relid: pg_sys::Oid, key: Option<&str>) {
    // SAFETY: in a transaction (this function's contract)
    let mut options: Vec<(String, String)> = unsafe { stored(relid) }
        .into_iter()
        .filter(|(n, _)| n != STORED_NAME)
        .collect();
    if let Some(k) = key {
        options.push((STORED_NAME.to_string(), k.to_string()));
    }
    // SAFETY: in a writing transaction with `relid` locked (this function's contract)
    unsafe { store(relid, &options) };
}

/// The column names of a key as written (identifiers separated by commas, quoted ones kept
/// as they are, others folded to lower case); `None` if it does not parse.
///
/// # Safety
///
/// Called in a backend, with a current memory context to copy the key into.
unsafe fn key_names(key: &str) -> Option<Vec<String>> {
    let raw = CString::new(key).ok()?;
    // SAFETY: `raw` is NUL-terminated; SplitIdentifierString splits the palloc'd copy in
    // place, and the list it makes points into that copy, NUL-terminated names
    unsafe {
        let copy = pg_sys::pstrdup(raw.as_ptr());
        let mut list: *mut pg_sys::List = std::ptr::null_mut();
        if !pg_sys::SplitIdentifierString(copy, b',' as std::ffi::c_char, &mut list) {
            return None;
        }
        Some(
            pgrx::PgList::<std::ffi::c_char>::from_pg(list)
                .iter_ptr()
                .map(|p| CStr::from_ptr(p).to_string_lossy().into_owned())
                .collect(),
        )
    }
}

/// Why column `attnum` of `relid` cannot be a key column (`None`: it can). The writer
/// sorts by the stored form, which orders like the type for by-value types (integers,
/// floats, dates, times, booleans) and, bytewise, for text, varchar, char, bytea, name and
/// uuid.
///
/// # Safety
///
/// Called in a transaction, as the catalog reads (and writes) need.
unsafe fn unsortable(relid: pg_sys::Oid, attnum: pg_sys::AttrNumber) -> Option<String> {
    // SAFETY: syscache lookups in a transaction (this function's contract)
    let (ty, base) = unsafe {
        let ty = pg_sys::get_atttype(relid, attnum);
        (ty, pg_sys::getBaseType(ty))
    };
    let bytewise = [
        pg_sys::TEXTOID,
        pg_sys::VARCHAROID,
        pg_sys::BPCHAROID,
        pg_sys::BYTEAOID,
        pg_sys::NAMEOID,
        pg_sys::UUIDOID,
    ];
    // SAFETY: a syscache lookup in a transaction (this function's contract)
    if unsafe { pg_sys::get_typbyval(base) } || bytewise.contains(&base) {
        return None;
    }
    // SAFETY: in a transaction (this function's contract); format_type_be returns a palloc'd
    // NUL-terminated name
    Some(
        unsafe { CStr::from_ptr(pg_sys::format_type_be(ty)) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Checks a key against the columns of `relid` and returns it as it is stored: each column
/// once, quoted where needed, separated by ", ".
///
/// # Safety
///
/// Called in a transaction, as the catalog reads (and writes) need.
unsafe fn validated(relid: pg_sys::Oid, key: &str) -> String {
    // SAFETY: in a transaction (this function's contract), with a memory context
    let Some(names) =
        unsafe { key_names(key) }.filter(|n| !n.is_empty() && n.iter().all(|s| !s.is_empty()))
    else {
        pgrx::ereport!(
            ERROR,
            ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid pg_columnar.sort_key \"{key}\""),
            "The key is a list of column names separated by commas, as in 'hostname, time'."
        );
    };
    let mut seen = Vec::new();
    for name in &names {
        let c = CString::new(name.as_str()).expect("no NUL in a name");
        // SAFETY: `c` is NUL-terminated; a syscache lookup in a transaction (this function's
        // contract)
        let attnum = unsafe { pg_sys::get_attnum(relid, c.as_ptr()) };
        if attnum <= 0 {
            pgrx::ereport!(
                ERROR,
                ERRCODE_UNDEFINED_COLUMN,
                format!(
                    "column \"{name}\" of pg_columnar.sort_key does not exist in \"{}\"",
                    // SAFETY: in a transaction (this function's contract)
                    unsafe { rel_name(relid) }
                )
            );
        }
        // SAFETY: in a transaction (this function's contract)
        if let Some(ty) = unsafe { unsortable(relid, attnum) } {
            pgrx::ereport!(
                ERROR,
                ERRCODE_DATATYPE_MISMATCH,
                format!("column \"{name}\" of pg_columnar.sort_key is of type {ty}, which pg_columnar cannot sort by"),
                "A key column is of an integer, float, date, time, timestamp, boolean, text, varchar, char, bytea, name or uuid type."
            );
        }
        if seen.contains(&attnum) {
            pgrx::ereport!(
                ERROR,
                ERRCODE_INVALID_PARAMETER_VALUE,
                format!("column \"{name}\" appears twice in pg_columnar.sort_key")
            );
        }
        seen.push(attnum);
    }
    // SAFETY: in a transaction (this function's contract); every attnum is one of `relid`'s
    // columns (checked above)
    unsafe { key_of_attnums(relid, &seen) }
}

/// A key of the columns `attnums` of `relid`, as stored.
///
/// # Safety
///
/// Called in a transaction, as the catalog reads (and writes) need.
/// Each of `attnums` is a column of `relid`.
unsafe fn key_of_attnums(relid: pg_sys::Oid, attnums: &[pg_sys::AttrNumber]) -> String {
    attnums
        .iter()
        // SAFETY: in a transaction, each a column of `relid` (this function's contract)
        .map(|&a| unsafe { key_column_name(relid, a) })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Column `attnum` of `relid` as a key names it: quoted where needed (`"Key=1", "a,b"` is
/// two columns). `pgcol.sort_order` shows stored keys the same way.
///
/// # Safety
///
/// Called in a transaction, as the catalog reads (and writes) need.
/// `attnum` is a column of `relid` (otherwise: an ERROR).
pub(crate) unsafe fn key_column_name(relid: pg_sys::Oid, attnum: pg_sys::AttrNumber) -> String {
    // SAFETY: a syscache lookup in a transaction (this function's contract), an ERROR rather
    // than null if the column is missing; both strings are palloc'd and NUL-terminated
    unsafe {
        CStr::from_ptr(pg_sys::quote_identifier(pg_sys::get_attname(
            relid, attnum, false,
        )))
    }
    .to_string_lossy()
    .into_owned()
}

/// The attribute numbers of the stored key's columns that exist (in key order).
///
/// # Safety
///
/// Called in a transaction, as the catalog reads (and writes) need.
unsafe fn key_attnums(relid: pg_sys::Oid, key: &str) -> Vec<pg_sys::AttrNumber> {
    // SAFETY: in a transaction (this function's contract), with a memory context
    unsafe { key_names(key) }
        .unwrap_or_default()
        .iter()
        .filter_map(|n| CString::new(n.as_str()).ok())
        // SAFETY: `c` is NUL-terminated; a syscache lookup in a transaction (this function's
        // contract)
        .map(|c| unsafe { pg_sys::get_attnum(relid, c.as_ptr()) })
        .filter(|&a| a > 0)
        .collect()
}

/// The name of relation `relid`, or its number if it has none.
///
/// # Safety
///
/// Called in a transaction, as the catalog reads (and writes) need.
unsafe fn rel_name(relid: pg_sys::Oid) -> String {
    // SAFETY: a syscache lookup in a transaction (this function's contract); the name is
    // null or a palloc'd NUL-terminated copy
    unsafe {
        let name = pg_sys::get_rel_name(relid);
        if name.is_null() {
            format!("{}", u32::from(relid))
        } else {
            CStr::from_ptr(name).to_string_lossy().into_owned()
        }
    }
}

/// The columns (0-based) the writer sorts a stripe of `rel` by: the stored key's columns
/// that exist and can be sorted by (a column dropped or changed by a statement that has not
/// ended yet is left out). Empty: no key.
pub fn sort_key(rel: pg_sys::Relation) -> Vec<usize> {
    // SAFETY: `rel` is an open relation of the caller's (a safe fn over a raw pointer: not
    // checked), in a transaction
    unsafe {
        let relid = (*rel).rd_id;
        let Some(key) = stored_key(relid) else {
            return Vec::new();
        };
        key_attnums(relid, &key)
            .into_iter()
            .filter(|&a| unsortable(relid, a).is_none())
            .map(|a| a as usize - 1)
            .collect()
    }
}

/// What the utility hook does around a statement that names our options or could change the
/// columns of a key ([`before`], then [`after`] once PostgreSQL ran it).
pub struct Pending {
    /// The relation (for a CREATE TABLE, its name: it exists only after).
    target: Target,
    /// A sort key to set (`Some(Some)`) or reset (`Some(None)`) after the statement.
    change: Option<Change>,
    /// The stored key's columns before the statement (renames and drops are followed).
    key_before: Option<Vec<pg_sys::AttrNumber>>,
    /// The stored key was taken out of `pg_class` for PostgreSQL to validate the other
    /// options: put it back after.
    hidden: Option<String>,
    /// The statement gives the table another access method than pg_columnar.
    leaves_columnar: bool,
}

enum Target {
    Created(*mut pg_sys::RangeVar),
    Existing(pg_sys::Oid),
}

/// Before PostgreSQL runs `pstmt` (the utility hook): prepares the statement, and returns
/// the one to run. A statement that names our options is changed; if its tree is read-only
/// (a cached plan's), it is a copy that is changed and run, as PostgreSQL itself copies a
/// read-only tree before it changes it.
///
/// # Safety
///
/// `pstmt` is the valid utility statement the ProcessUtility hook was given, in a
/// transaction; the statement may be changed unless `read_only_tree`.
pub unsafe fn before(
    pstmt: *mut pg_sys::PlannedStmt,
    read_only_tree: bool,
) -> (Option<Pending>, *mut pg_sys::PlannedStmt) {
    // SAFETY: `pstmt` is valid (this function's contract)
    let stmt = unsafe { (*pstmt).utilityStmt };
    if stmt.is_null() {
        return (None, pstmt);
    }
    // SAFETY: `stmt` is a non-null utility statement, a node, cast to the type its tag names
    let names_ours = unsafe {
        match (*stmt).type_ {
            pg_sys::NodeTag::T_CreateStmt => {
                mentions_ours((*(stmt as *mut pg_sys::CreateStmt)).options)
            }
            pg_sys::NodeTag::T_AlterTableStmt => pgrx::PgList::<pg_sys::AlterTableCmd>::from_pg(
                (*(stmt as *mut pg_sys::AlterTableStmt)).cmds,
            )
            .iter_ptr()
            .any(|c| is_options_cmd(c) && mentions_ours((*c).def as *mut pg_sys::List)),
            _ => false,
        }
    };
    let run = if read_only_tree && names_ours {
        // SAFETY: a deep copy of a valid node tree, in the current memory context
        unsafe {
            pg_sys::copyObjectImpl(pstmt as *const std::ffi::c_void) as *mut pg_sys::PlannedStmt
        }
    } else {
        pstmt
    };
    // SAFETY: `run` is `pstmt` or its copy, whose utility statement is not null (checked
    // above) and may be changed: a copy, or a tree that is not read-only
    (unsafe { before_statement((*run).utilityStmt) }, run)
}

/// Takes our options out of the utility statement `stmt` (changed in place) and prepares
/// [`after`]. `None`: nothing to do.
///
/// # Safety
///
/// `stmt` is a valid utility statement that may be changed, in a transaction.
unsafe fn before_statement(stmt: *mut pg_sys::Node) -> Option<Pending> {
    // SAFETY: `stmt` is a valid node (this function's contract)
    let tag = unsafe { (*stmt).type_ };
    match tag {
        // SAFETY: the tag says `stmt` is a CreateStmt, valid and changeable (this function's
        // contract); its options are DefElems and its relation a RangeVar
        pg_sys::NodeTag::T_CreateStmt => unsafe {
            let c = stmt as *mut pg_sys::CreateStmt;
            if !mentions_ours((*c).options) {
                return None;
            }
            let mut change = take_ours(&mut (*c).options, false);
            // CREATE TABLE IF NOT EXISTS of a table that exists changes nothing of it
            if (*c).if_not_exists
                && pg_sys::RangeVarGetRelidExtended(
                    (*c).relation,
                    pg_sys::NoLock as pg_sys::LOCKMODE,
                    pg_sys::RVROption::RVR_MISSING_OK,
                    None,
                    std::ptr::null_mut(),
                ) != pg_sys::InvalidOid
            {
                change = None;
            }
            Some(Pending {
                target: Target::Created((*c).relation),
                change,
                key_before: None,
                hidden: None,
                leaves_columnar: false,
            })
        },
        // SAFETY: the tag says `stmt` is a CreateTableAsStmt (this function's contract); its
        // `into` is null or an IntoClause whose options are DefElems
        pg_sys::NodeTag::T_CreateTableAsStmt => unsafe {
            let c = stmt as *mut pg_sys::CreateTableAsStmt;
            if !(*c).into.is_null() && mentions_ours((*(*c).into).options) {
                pgrx::ereport!(
                    ERROR,
                    pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                    "CREATE TABLE AS does not take pg_columnar.sort_key",
                    "Create the table WITH (pg_columnar.sort_key = ...), then INSERT ... SELECT into it; or set the key afterwards and rewrite the table with VACUUM FULL."
                );
            }
            None
        },
        // SAFETY: the tag says `stmt` is an AlterTableStmt, valid and changeable (this
        // function's contract); its commands are AlterTableCmds, and the catalog reads and
        // writes run in the statement's transaction, under the lock taken here
        pg_sys::NodeTag::T_AlterTableStmt => unsafe {
            let a = stmt as *mut pg_sys::AlterTableStmt;
            if (*a).objtype != pg_sys::ObjectType::OBJECT_TABLE {
                return None;
            }
            let relid = pg_sys::RangeVarGetRelidExtended(
                (*a).relation,
                pg_sys::NoLock as pg_sys::LOCKMODE,
                if (*a).missing_ok {
                    pg_sys::RVROption::RVR_MISSING_OK
                } else {
                    0
                },
                None,
                std::ptr::null_mut(),
            );
            // a role that does not own the table gets PostgreSQL's "must be owner" before
            // anything is locked or written for our option (nothing to take out of the
            // statement: it fails at that check)
            if relid == pg_sys::InvalidOid || !crate::compat::owns_relation(relid) {
                return None;
            }
            let stored = stored_key(relid);
            let cmds = pgrx::PgList::<pg_sys::AlterTableCmd>::from_pg((*a).cmds);
            let names_ours = cmds
                .iter_ptr()
                .any(|c| is_options_cmd(c) && mentions_ours((*c).def as *mut pg_sys::List));
            if stored.is_none() && !names_ours {
                return None;
            }
            let mut change = None;
            let mut kept = std::ptr::null_mut();
            let (mut other_options, mut to_columnar, mut leaves_columnar) = (false, false, false);
            for cmd in pgrx::PgList::<pg_sys::AlterTableCmd>::from_pg((*a).cmds).iter_ptr() {
                if is_options_cmd(cmd) {
                    let mut list = (*cmd).def as *mut pg_sys::List;
                    // (the tree is changed only where it names ours: see `before`)
                    if names_ours {
                        if let Some(c) = take_ours(
                            &mut list,
                            (*cmd).subtype == pg_sys::AlterTableType::AT_ResetRelOptions,
                        ) {
                            change = Some(c);
                        }
                        (*cmd).def = list as *mut pg_sys::Node;
                    }
                    if list.is_null() {
                        continue;
                    }
                    other_options = true;
                }
                if (*cmd).subtype == pg_sys::AlterTableType::AT_SetAccessMethod {
                    let columnar = !(*cmd).name.is_null()
                        && CStr::from_ptr((*cmd).name).to_bytes() == b"pg_columnar";
                    to_columnar |= columnar;
                    leaves_columnar |= !columnar;
                }
                if names_ours {
                    kept = pg_sys::lappend(kept, cmd as *mut std::ffi::c_void);
                }
            }
            if names_ours {
                (*a).cmds = kept;
            }
            let mut pending = Pending {
                target: Target::Existing(relid),
                change,
                key_before: stored.as_ref().map(|k| key_attnums(relid, k)),
                hidden: None,
                leaves_columnar,
            };
            // what is changed in pg_class before PostgreSQL runs the statement is changed
            // under the lock the statement takes (PostgreSQL takes it once, at its start)
            let early_key = to_columnar && !other_options && pending.change.is_some();
            if early_key || (other_options && stored.is_some()) {
                let level = pg_sys::AlterTableGetLockLevel((*a).cmds)
                    .max(pg_sys::ShareUpdateExclusiveLock as pg_sys::LOCKMODE);
                pg_sys::LockRelationOid(relid, level);
            }
            // a key set with SET ACCESS METHOD pg_columnar is stored first, so that the
            // rewrite into pg_columnar sorts by it
            if early_key {
                if let Some(change) = pending.change.take() {
                    apply(relid, change.as_deref(), true);
                    pending.key_before = stored_key(relid).map(|k| key_attnums(relid, &k));
                }
            }
            if other_options {
                if let Some(key) = stored_key(relid) {
                    store_key(relid, None);
                    pending.hidden = Some(key);
                }
            }
            Some(pending)
        },
        // SAFETY: the tag says `stmt` is a RenameStmt (this function's contract), whose
        // relation is checked non-null before it is looked up, in the transaction
        pg_sys::NodeTag::T_RenameStmt => unsafe {
            let r = stmt as *mut pg_sys::RenameStmt;
            if (*r).renameType != pg_sys::ObjectType::OBJECT_COLUMN
                || (*r).relationType != pg_sys::ObjectType::OBJECT_TABLE
                || (*r).relation.is_null()
            {
                return None;
            }
            let relid = pg_sys::RangeVarGetRelidExtended(
                (*r).relation,
                pg_sys::NoLock as pg_sys::LOCKMODE,
                if (*r).missing_ok {
                    pg_sys::RVROption::RVR_MISSING_OK
                } else {
                    0
                },
                None,
                std::ptr::null_mut(),
            );
            if relid == pg_sys::InvalidOid || !crate::compat::owns_relation(relid) {
                return None;
            }
            let key = stored_key(relid)?;
            Some(Pending {
                target: Target::Existing(relid),
                change: None,
                key_before: Some(key_attnums(relid, &key)),
                hidden: None,
                leaves_columnar: false,
            })
        },
        _ => None,
    }
}

/// Whether `cmd` sets or resets table options.
///
/// # Safety
///
/// `cmd` is a valid AlterTableCmd.
unsafe fn is_options_cmd(cmd: *mut pg_sys::AlterTableCmd) -> bool {
    matches!(
        // SAFETY: `cmd` is valid (this function's contract)
        unsafe { (*cmd).subtype },
        pg_sys::AlterTableType::AT_SetRelOptions | pg_sys::AlterTableType::AT_ResetRelOptions
    )
}

/// Whether the options `list` name one of ours.
///
/// # Safety
///
/// `list` is null or a valid `List *` of DefElem.
unsafe fn mentions_ours(list: *mut pg_sys::List) -> bool {
    // SAFETY: `list` is null or a valid list of DefElem (this function's contract)
    unsafe {
        pgrx::PgList::<pg_sys::DefElem>::from_pg(list)
            .iter_ptr()
            .any(|d| our_option(d).is_some())
    }
}

/// The NOTICE for a sort key stored on a table of another access method.
fn kept_unused(name: &str) {
    pgrx::ereport!(
        NOTICE,
        pgrx::PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
        format!(
            "pg_columnar.sort_key of \"{name}\" is kept but unused: it is not a pg_columnar table"
        ),
        "The key applies once the table is one (ALTER TABLE ... SET ACCESS METHOD pg_columnar)."
    );
}

/// Sets or removes the key of `relid` (validated against its columns); `becoming`: the
/// statement makes the table a pg_columnar one. On a plain table of another access method
/// the key is kept, unused, with a NOTICE.
///
/// # Safety
///
/// In a transaction that may write the catalogs, with `relid` locked by the statement.
unsafe fn apply(relid: pg_sys::Oid, key: Option<&str>, becoming: bool) {
    // SAFETY: in a transaction, `relid` locked (this function's contract): opened and closed
    // here, `is_columnar` taking null for a relation that cannot be opened
    let columnar = unsafe {
        let rel = pg_sys::RelationIdGetRelation(relid);
        let columnar = is_columnar(rel);
        pg_sys::RelationClose(rel);
        columnar
    };
    // tools that copy a table's definition (Citus's rewrites, dump tools) write the key into
    // the CREATE TABLE of a table of another access method: kept there, unused
    let unused = !columnar && !becoming && key.is_some();
    // SAFETY: in a transaction (this function's contract)
    if unused && unsafe { pg_sys::get_rel_relkind(relid) } as u8 != pg_sys::RELKIND_RELATION {
        pgrx::ereport!(
            ERROR,
            ERRCODE_WRONG_OBJECT_TYPE,
            // SAFETY: in a transaction (this function's contract)
            format!(
                "pg_columnar.sort_key is an option of tables, and \"{}\" is not one",
                unsafe { rel_name(relid) }
            ),
            "Set the key on each partition."
        );
    }
    // SAFETY: in a writing transaction with `relid` locked (this function's contract)
    unsafe {
        match key {
            Some(k) => store_key(relid, Some(&validated(relid, k))),
            None => {
                if stored_key(relid).is_some() {
                    store_key(relid, None);
                }
            }
        }
    }
    if unused {
        // SAFETY: in a transaction (this function's contract)
        kept_unused(&unsafe { rel_name(relid) });
    }
}

/// After PostgreSQL ran the statement [`before`] prepared.
///
/// # Safety
///
/// Called in the statement's transaction, after it ran, with the `Pending` [`before`] or
/// [`before_statement`] made for it (whose RangeVar, for a CREATE TABLE, is still valid).
pub unsafe fn after(p: Pending) {
    let relid = match p.target {
        // SAFETY: the statement's RangeVar, valid until its end (this function's contract);
        // the table it created exists (an ERROR otherwise), locked by that statement
        Target::Created(rv) => unsafe {
            pg_sys::RangeVarGetRelidExtended(
                rv,
                pg_sys::NoLock as pg_sys::LOCKMODE,
                0,
                None,
                std::ptr::null_mut(),
            )
        },
        Target::Existing(relid) => relid,
    };
    if let Some(key) = p.hidden {
        // SAFETY: in the statement's transaction, which holds `relid` locked (this function's
        // contract)
        unsafe { store_key(relid, Some(&key)) };
    }
    if p.leaves_columnar {
        // kept for a return to pg_columnar (another access method reads no key; the hook
        // hides it from PostgreSQL's validation of the table's options, see `before`)
        // SAFETY: in the statement's transaction, which holds `relid` locked
        unsafe {
            if stored_key(relid).is_some() && p.change.is_none() {
                kept_unused(&rel_name(relid));
            }
        }
    }
    // follow renames and drops of the key's columns
    if let Some(before) = p.key_before {
        // SAFETY: in the statement's transaction, which holds `relid` locked; the column
        // names looked up are null (none) or palloc'd NUL-terminated copies; `now` holds
        // only columns of `relid`, as `key_of_attnums` wants
        unsafe {
            let stored = stored_key(relid).unwrap_or_default();
            let now: Vec<pg_sys::AttrNumber> = before
                .iter()
                .copied()
                .filter(|&a| {
                    // a dropped column keeps its number under another name, which finds nothing
                    let name = pg_sys::get_attname(relid, a, true);
                    !name.is_null()
                        && pg_sys::get_attnum(relid, name) == a
                        && unsortable(relid, a).is_none()
                })
                .collect();
            if now.len() < before.len() {
                pgrx::notice!("pg_columnar: a column left the sort key of \"{}\" (dropped, or now of a type it cannot sort by)", rel_name(relid));
            }
            let key = key_of_attnums(relid, &now);
            if key != stored && !stored.is_empty() {
                store_key(relid, (!now.is_empty()).then_some(key.as_str()));
            }
        }
    }
    if let Some(change) = p.change {
        // SAFETY: in the statement's transaction, which holds `relid` locked
        unsafe { apply(relid, change.as_deref(), false) };
    }
}

/// The utility hook's calls in progress: with none, a statement reached the event trigger
/// without the hook (the library was loaded by that very statement, as in the first
/// CREATE TABLE of a `pg_restore` session), and the trigger does the hook's work.
pub struct HookActive;

thread_local! {
    static HOOK_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// A statement the event trigger prepared at ddl_command_start, by its parse tree.
    static TRIGGER_PENDING: std::cell::RefCell<Option<(usize, Pending)>> = const { std::cell::RefCell::new(None) };
}

impl HookActive {
    pub fn enter() -> HookActive {
        HOOK_DEPTH.with(|d| d.set(d.get() + 1));
        HookActive
    }
}

impl Drop for HookActive {
    fn drop(&mut self) {
        HOOK_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// The event trigger `pgcol.table_options` at ddl_command_start and ddl_command_end of
/// CREATE TABLE and ALTER TABLE: [`before_statement`] and [`after`] for a statement the
/// utility hook did not see. The parse tree it is given is the statement's own copy, which
/// PostgreSQL goes on to run.
///
/// # Safety
///
/// `fcinfo` is the valid call information PostgreSQL gives the trigger's function.
pub unsafe fn event_trigger(fcinfo: pg_sys::FunctionCallInfo) {
    // SAFETY: `fcinfo` is valid (this function's contract)
    let Some(data) = (unsafe { super::ddl::event_trigger_data(fcinfo) }) else {
        return;
    };
    if HOOK_DEPTH.with(|d| d.get()) > 0 {
        return;
    }
    // SAFETY: `data` is this call's EventTriggerData, valid while the trigger runs, with a
    // NUL-terminated event name
    let (tree, event) = unsafe { ((*data).parsetree, CStr::from_ptr((*data).event)) };
    match event.to_bytes() {
        b"ddl_command_start" => {
            // what `before_statement` puts into the tree (the command list it rebuilds) must
            // outlive this call: PostgreSQL runs each trigger in a memory context of its own
            // and deletes it after the call, while the statement, and the ddl_command_end
            // triggers, go on reading the tree. The transaction's context outlives both.
            // SAFETY: `tree` is the statement's own copy of its parse tree, which PostgreSQL
            // runs next, in this transaction (so TopTransactionContext exists); an ERROR inside
            // leaves the context switched, which the transaction's abort switches back
            let pending = unsafe {
                let old = pg_sys::MemoryContextSwitchTo(pg_sys::TopTransactionContext);
                let pending = before_statement(tree);
                pg_sys::MemoryContextSwitchTo(old);
                pending
            };
            TRIGGER_PENDING.with(|t| *t.borrow_mut() = pending.map(|p| (tree as usize, p)));
        }
        b"ddl_command_end" => {
            let pending =
                TRIGGER_PENDING.with(|t| t.borrow_mut().take_if(|(k, _)| *k == tree as usize));
            if let Some((_, p)) = pending {
                // SAFETY: the statement `p` was made for at its start (the same parse tree)
                // has run, in this transaction
                unsafe { after(p) };
            }
        }
        _ => {}
    }
}
