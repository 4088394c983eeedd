//! Logical replication on a server where a pg_columnar table's changes are not decoded (the
//! library not in `shared_preload_libraries`, or `wal_level` below `logical`: see
//! `am::logical`, which decodes them otherwise): what such a table refuses so that no
//! subscriber misses a change without a word.
//!
//! There, logical decoding reads heap's WAL records alone; a pg_columnar table writes its
//! stripes as generic WAL and its deletions as rows of the (never published) catalog
//! `pgcol.row_mark`, which decoding does not turn into changes of the table. A subscriber's
//! initial copy reads the table through a scan and gets its rows; after that an INSERT,
//! UPDATE or DELETE would reach no subscriber. So:
//!
//! * **Writes are refused** while a publication that publishes that kind of change covers the
//!   table, however it does (by name, through a partitioned table above it, by its schema, or
//!   `FOR ALL TABLES`): [`check_write`], from the insert, delete and update callbacks. What
//!   covers a table is PostgreSQL's own answer (`RelationBuildPublicationDesc`, cached in the
//!   relcache and invalidated when publications change), the one heap's replica-identity
//!   check uses. A table rewrite's transient table (ALTER TABLE, SET ACCESS METHOD) is exempt:
//!   decoding skips a rewrite's rows for heap too, and a subscriber already has them.
//!   TRUNCATE is not refused: PostgreSQL logs it for decoding whatever the access method.
//! * **Adding a pg_columnar table to a publication by name is refused** when it happens
//!   (CREATE / ALTER PUBLICATION, ATTACH PARTITION or CREATE TABLE ... PARTITION OF under a
//!   published partitioned table, SET ACCESS METHOD of a published table): [`event_trigger`],
//!   at `ddl_command_end`, so it runs whether or not the statement loaded the library. A
//!   publication of all tables or of a schema is not refused (it may be meant for the heap
//!   tables); it warns, naming the pg_columnar tables whose writes it stops.
//!
//! Each refusal's hint says what makes the changes decoded; for the publications Citus makes
//! to move and split shards, also its mode that needs no publication.
//!
//! A pg_columnar table can be a subscription's target: the apply worker's inserts, updates and
//! deletes are ordinary writes (tests/replication).

use pgrx::pg_sys;
use pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED;
use std::ffi::CStr;

/// A kind of change a publication may publish.
#[derive(Clone, Copy)]
pub(super) enum Change {
    Insert,
    Update,
    Delete,
}

impl Change {
    fn word(self) -> &'static str {
        match self {
            Change::Insert => "INSERT",
            Change::Update => "UPDATE",
            Change::Delete => "DELETE",
        }
    }

    /// The words of the error message: "cannot insert into" a table.
    fn verb(self) -> &'static str {
        match self {
            Change::Insert => "insert into",
            Change::Update => "update",
            Change::Delete => "delete from",
        }
    }

    /// The `pg_publication` column that says whether a publication publishes it.
    fn column(self) -> &'static str {
        match self {
            Change::Insert => "pubinsert",
            Change::Update => "pubupdate",
            Change::Delete => "pubdelete",
        }
    }
}

/// Refuses a write of `change` into the pg_columnar table `rel` while a publication that
/// publishes such changes covers it.
pub(super) fn check_write(rel: pg_sys::Relation, change: Change) {
    if super::logical::decodes() {
        return;
    }
    // SAFETY: `rel` is an open relation (every caller's; a safe fn over a raw pointer, so not
    // checked); the zeroed descriptor is filled by PostgreSQL (a copy of the relcache's when
    // it has one, so this costs a copy per call after the first).
    let published = unsafe {
        if (*(*rel).rd_rel).relrewrite != pg_sys::InvalidOid {
            return;
        }
        let mut desc: pg_sys::PublicationDesc = std::mem::zeroed();
        pg_sys::RelationBuildPublicationDesc(rel, &mut desc);
        match change {
            Change::Insert => desc.pubactions.pubinsert,
            Change::Update => desc.pubactions.pubupdate,
            Change::Delete => desc.pubactions.pubdelete,
        }
    };
    if published {
        refuse_write(rel, change);
    }
}

#[cold]
fn refuse_write(rel: pg_sys::Relation, change: Change) -> ! {
    // SAFETY: `rel` is the open relation `check_write` was given
    let relid = unsafe { (*rel).rd_id };
    let name = crate::storage::relation_name(rel);
    let publications =
        covering_publications(relid, change).unwrap_or_else(|| "a publication".into());
    report(
        pgrx::PgLogLevel::ERROR,
        format!("cannot {} pg_columnar table \"{name}\": it is published by {publications}", change.verb()),
        format!("Logical decoding does not see a pg_columnar table's changes on this server, so the publication's subscribers would miss this {}.", change.word()),
        &format!("{ENABLE} Or publish the tables to replicate by name (FOR TABLE) or by a schema that holds no pg_columnar table."),
    );
    unreachable!("an ERROR does not return")
}

/// What makes a pg_columnar table's changes decoded (`am::logical`).
const ENABLE: &str = "To have its changes decoded, add pg_columnar to shared_preload_libraries and set wal_level = logical, then restart the server.";

/// The prefixes of the publications Citus makes to move and split shards in its default
/// (logical) mode.
const CITUS_PUBLICATIONS: [&str; 2] = [
    "citus_shard_move_publication_",
    "citus_shard_split_publication_",
];

/// Raises a report with a detail and a hint.
fn report(level: pgrx::PgLogLevel, message: String, detail: String, hint: &str) {
    pgrx::pg_sys::panic::ErrorReport::new(
        ERRCODE_FEATURE_NOT_SUPPORTED,
        message,
        pgrx::function_name!(),
    )
    .set_detail(detail)
    .set_hint(hint)
    .report(level);
}

/// SQL over a publication `p`: whether it covers the table whose own oid and ancestors' the
/// subquery `lineage` lists (`pg_partition_ancestors` and `pg_partition_tree` list nothing
/// for a table outside a partition tree, so a lineage names the table itself too): as a publication of all tables, by naming it or a partitioned
/// table above it, or by the schema of one of them.
fn covers(lineage: &str) -> String {
    format!(
        "({} \
          OR EXISTS (SELECT 1 FROM pg_catalog.pg_publication_rel r WHERE r.prpubid = p.oid AND {} AND r.prrelid IN {lineage}) \
          OR EXISTS (SELECT 1 FROM pg_catalog.pg_publication_namespace n JOIN pg_catalog.pg_class a ON a.relnamespace = n.pnnspid \
                     WHERE n.pnpubid = p.oid AND a.oid IN {lineage}))",
        crate::compat::all_tables_cover(lineage),
        crate::compat::PUBLICATION_REL_MEMBER
    )
}

/// The publications that publish `change` and cover the table `relid`, quoted and listed,
/// for the error message; None if the catalog query fails.
fn covering_publications(relid: pg_sys::Oid, change: Change) -> Option<String> {
    let query = format!(
        "SELECT string_agg(pg_catalog.format('\"%s\"%s', p.pubname, \
                           CASE WHEN p.puballtables THEN ' (FOR ALL TABLES)' ELSE '' END), ', ' ORDER BY p.pubname) \
         FROM pg_catalog.pg_publication p WHERE p.{} AND {}",
        change.column(),
        covers("(SELECT $1 UNION SELECT relid FROM pg_catalog.pg_partition_ancestors($1))")
    );
    let list = pgrx::Spi::get_one_with_args::<String>(&query, &[relid.into()])
        .ok()
        .flatten()?;
    let plural = list.contains("\", \"");
    Some(format!(
        "{} {list}",
        if plural {
            "publications"
        } else {
            "publication"
        }
    ))
}

/// The event trigger `pgcol.check_publications`, at `ddl_command_end` of a statement that
/// can make a publication cover a pg_columnar table: an ERROR if it put one in a publication
/// by name (directly or through a partitioned table), a WARNING if a publication of all
/// tables or of schemas it created or changed covers one.
///
/// # Safety
///
/// `fcinfo` is the valid call information PostgreSQL gives the trigger's function.
pub unsafe fn event_trigger(fcinfo: pg_sys::FunctionCallInfo) {
    if super::logical::decodes() {
        return;
    }
    // SAFETY: `fcinfo` is valid (this function's contract)
    let Some(data) = (unsafe { super::ddl::event_trigger_data(fcinfo) }) else {
        return;
    };
    // SAFETY: `data` is this call's EventTriggerData, valid while the trigger runs
    let tree = unsafe { (*data).parsetree };
    if tree.is_null() {
        return;
    }
    // SAFETY: `tree` is the command's parse tree, valid while the trigger runs; each arm casts
    // it to the statement its tag names, whose names and RangeVars are null or valid
    unsafe {
        match (*tree).type_ {
            pg_sys::NodeTag::T_CreatePublicationStmt => {
                let s = tree as *mut pg_sys::CreatePublicationStmt;
                publication_members((*s).pubname);
                warn_covered((*s).pubname);
            }
            pg_sys::NodeTag::T_AlterPublicationStmt => {
                let s = tree as *mut pg_sys::AlterPublicationStmt;
                publication_members((*s).pubname);
                warn_covered((*s).pubname);
            }
            pg_sys::NodeTag::T_AlterTableStmt => {
                let s = tree as *mut pg_sys::AlterTableStmt;
                let cmds = pgrx::PgList::<pg_sys::AlterTableCmd>::from_pg((*s).cmds);
                let adds = cmds.iter_ptr().any(|c| {
                    matches!(
                        (*c).subtype,
                        pg_sys::AlterTableType::AT_SetAccessMethod
                            | pg_sys::AlterTableType::AT_AttachPartition
                    )
                });
                if adds {
                    relation_members((*s).relation);
                }
            }
            pg_sys::NodeTag::T_CreateStmt => {
                let s = tree as *mut pg_sys::CreateStmt;
                if !(*s).partbound.is_null() {
                    relation_members((*s).relation);
                }
            }
            _ => {}
        }
    }
}

/// The first pg_columnar table that a publication lists by name or through a partitioned
/// table it lists, as (table, publication), among the rows `filter` (SQL over `r`, the
/// `pg_publication_rel` row, `p`, the publication, and `t`, the table) keeps.
fn listed_columnar(filter: &str, arg: pgrx::datum::DatumWithOid) -> Option<(String, String)> {
    let am = super::relation::am_oid()?;
    let query = format!(
        "SELECT ns.nspname || '.' || t.relname, p.pubname::text \
         FROM pg_catalog.pg_publication_rel r \
         JOIN pg_catalog.pg_publication p ON p.oid = r.prpubid \
         CROSS JOIN LATERAL (SELECT r.prrelid AS relid UNION SELECT relid FROM pg_catalog.pg_partition_tree(r.prrelid)) tree \
         JOIN pg_catalog.pg_class t ON t.oid = tree.relid \
         JOIN pg_catalog.pg_namespace ns ON ns.oid = t.relnamespace \
         WHERE t.relam = $1 AND {filter} AND {} ORDER BY 1 LIMIT 1",
        crate::compat::PUBLICATION_REL_MEMBER
    );
    match pgrx::Spi::get_two_with_args::<String, String>(&query, &[am.into(), arg]) {
        Ok((Some(table), Some(publication))) => Some((table, publication)),
        _ => None,
    }
}

fn refuse_member((table, publication): (String, String)) -> ! {
    let hint = if CITUS_PUBLICATIONS
        .iter()
        .any(|p| publication.starts_with(p))
    {
        format!("{ENABLE} Until then, move or split the shard with shard_transfer_mode => 'block_writes'.")
    } else {
        format!("{ENABLE} Or publish only the other tables; a pg_columnar table can be the target of a subscription.")
    };
    report(
        pgrx::PgLogLevel::ERROR,
        format!("pg_columnar table \"{table}\" cannot be part of publication \"{publication}\""),
        "Logical decoding does not see a pg_columnar table's changes on this server, so the publication's subscribers would miss them.".into(),
        &hint,
    );
    unreachable!("an ERROR does not return")
}

/// Refuses the pg_columnar tables that the publication `pubname` lists.
///
/// # Safety
///
/// `pubname` is null or a NUL-terminated string valid for the call.
unsafe fn publication_members(pubname: *const std::ffi::c_char) {
    if pubname.is_null() {
        return;
    }
    // SAFETY: `pubname` is not null (checked above), so a NUL-terminated string (this
    // function's contract); it is copied at once
    let name = unsafe { CStr::from_ptr(pubname) }
        .to_string_lossy()
        .into_owned();
    if let Some(found) = listed_columnar("p.pubname = $2", name.into()) {
        refuse_member(found);
    }
}

/// Refuses the pg_columnar tables in the partition tree of `relation` that a publication
/// lists (through `relation` or a table above it).
///
/// # Safety
///
/// `relation` is null or a valid RangeVar, in a transaction.
unsafe fn relation_members(relation: *mut pg_sys::RangeVar) {
    if relation.is_null() {
        return;
    }
    // SAFETY: `relation` is a valid RangeVar (not null, so by this function's contract); with
    // NoLock and RVR_MISSING_OK the lookup takes no lock and a missing name is InvalidOid
    let relid = unsafe {
        pg_sys::RangeVarGetRelidExtended(
            relation,
            pg_sys::NoLock as pg_sys::LOCKMODE,
            pg_sys::RVROption::RVR_MISSING_OK,
            None,
            std::ptr::null_mut(),
        )
    };
    if relid == pg_sys::InvalidOid {
        return;
    }
    if let Some(found) = listed_columnar(
        "t.oid IN (SELECT $2 UNION SELECT relid FROM pg_catalog.pg_partition_tree($2))",
        relid.into(),
    ) {
        refuse_member(found);
    }
}

/// Warns that the publication `pubname`, by all tables or by schemas, covers pg_columnar
/// tables whose writes it now refuses (if it publishes inserts, updates or deletes).
///
/// # Safety
///
/// `pubname` is null or a NUL-terminated string valid for the call.
unsafe fn warn_covered(pubname: *const std::ffi::c_char) {
    let Some(am) = super::relation::am_oid() else {
        return;
    };
    if pubname.is_null() {
        return;
    }
    // SAFETY: `pubname` is not null (checked above), so a NUL-terminated string (this
    // function's contract); it is copied at once
    let name = unsafe { CStr::from_ptr(pubname) }
        .to_string_lossy()
        .into_owned();
    let query = format!(
        "SELECT string_agg(c.oid::pg_catalog.regclass::text, ', ' ORDER BY c.oid::pg_catalog.regclass::text), count(*) \
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_publication p ON p.pubname = $2 \
         WHERE c.relam = $1 AND c.relkind = 'r' AND pg_catalog.pg_relation_is_publishable(c.oid) \
           AND (p.pubinsert OR p.pubupdate OR p.pubdelete) AND {}",
        covers("(SELECT c.oid UNION SELECT relid FROM pg_catalog.pg_partition_ancestors(c.oid))")
    );
    let Ok((Some(tables), Some(n))) =
        pgrx::Spi::get_two_with_args::<String, i64>(&query, &[am.into(), name.clone().into()])
    else {
        return;
    };
    let list = if n > 10 {
        format!(
            "{} and {} more",
            tables.split(", ").take(10).collect::<Vec<_>>().join(", "),
            n - 10
        )
    } else {
        tables
    };
    report(
        pgrx::PgLogLevel::WARNING,
        format!("publication \"{name}\" covers pg_columnar tables, which will refuse the writes it publishes: {list}"),
        "Logical decoding does not see a pg_columnar table's changes on this server; a write the publication would publish is refused rather than missed by its subscribers.".into(),
        &format!("{ENABLE} Or publish the tables to replicate by name (FOR TABLE) or by a schema that holds no pg_columnar table."),
    );
}
