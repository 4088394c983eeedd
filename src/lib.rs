//! pg_columnar: a columnar table access method for PostgreSQL.
//!
//! The codec lives in the pgrx-free crate `pg_columnar_codec`; this crate holds the storage
//! layer ([`storage`]), the access method ([`am`]), the hooks it needs ([`hooks`]), the
//! version differences ([`compat`]) and the SQL API ([`inspect`], `pgcol.version`).
//! Everything the extension puts into a database lives in the schema `pgcol` (see docs/SQL.md,
//! "Names").

// Every unsafe operation is in an `unsafe` block with a `// SAFETY:` line, also inside an
// `unsafe fn` (whose `# Safety` section says what its callers promise).
#![deny(unsafe_op_in_unsafe_fn)]

use pgrx::prelude::*;

pub mod am;
pub mod compat;
pub mod exec;
pub mod hooks;
pub mod inspect;
pub mod storage;

::pgrx::pg_module_magic!(name, version);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pgrx::GucRegistry::define_int_guc(
        c"pg_columnar.stripe_row_limit",
        c"Rows per stripe written to a pg_columnar table.",
        c"Rows are buffered and written as one stripe of 1024-row vectors once this many are buffered (or at statement end). Larger stripes share FSST tables and dictionaries over more rows.",
        &am::write::STRIPE_ROW_LIMIT,
        1024,
        10_000_000,
        pgrx::GucContext::Userset,
        pgrx::GucFlags::default(),
    );
    pgrx::GucRegistry::define_int_guc(
        c"pg_columnar.write_buffer_memory",
        c"Memory for rows inserted but not yet written as stripes, all pg_columnar tables of a session together.",
        c"Past it, the largest buffer is written as a stripe early (a load into many partitions at once would otherwise hold a stripe's worth of rows per partition). Counts the bytes of the values.",
        &am::write::WRITE_BUFFER_MEMORY,
        1024,
        i32::MAX,
        pgrx::GucContext::Userset,
        pgrx::GucFlags::UNIT_KB,
    );
    pgrx::GucRegistry::define_bool_guc(
        c"pg_columnar.encode_in_background",
        c"Encode full stripes on a helper thread while the statement goes on inserting.",
        c"The helper thread runs only the codec (pure Rust, no PostgreSQL calls); the backend writes the pages. Off: encode in the backend.",
        &am::write::ENCODE_IN_BACKGROUND,
        pgrx::GucContext::Userset,
        pgrx::GucFlags::default(),
    );
    pgrx::GucRegistry::define_bool_guc(
        c"pg_columnar.gate_ignore_row_period",
        c"Test only: the stripe writer does not look for a row period.",
        c"Changes encoding decisions on purpose, so the gate can prove it notices a perturbed encoder. Never needed otherwise.",
        &am::write::IGNORE_ROW_PERIOD,
        pgrx::GucContext::Suset,
        pgrx::GucFlags::default(),
    );
    pgrx::GucRegistry::define_int_guc(
        c"pg_columnar.test_row_number_gap",
        c"Test only: every reservation of row numbers first skips this many.",
        c"Lets a test reach the row numbers of a table of tens of millions of rows with a few rows. Never needed otherwise.",
        &am::write::ROW_NUMBER_GAP,
        0,
        i32::MAX,
        pgrx::GucContext::Suset,
        pgrx::GucFlags::default(),
    );
    // SAFETY: PostgreSQL calls `_PG_init` once per backend, in its one thread, on loading the
    // library and before any hook can run: what both `install`s require.
    unsafe {
        hooks::install();
        exec::install();
    }
    am::logical::register();
}

/// The SQL API. The schema is created by the extension script, so it belongs to the
/// extension and DROP EXTENSION removes it.
#[pg_schema]
mod pgcol {
    use pgrx::prelude::*;

    /// The extension's version, the PostgreSQL major it was built for, the codec's format
    /// version and the build profile, e.g. `pg_columnar 0.1.0 (PostgreSQL 15, codec format 4,
    /// release build)`: a debug build is about ten times slower, and timings should say which
    /// one they measured.
    #[pg_extern(immutable, parallel_safe)]
    #[search_path(pg_catalog, pg_temp)]
    fn version() -> String {
        format!(
            "pg_columnar {} (PostgreSQL {}, codec format {}, {} build)",
            env!("CARGO_PKG_VERSION"),
            pg_sys::PG_MAJORVERSION_NUM,
            pg_columnar_codec::FORMAT_VERSION,
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        )
    }

    /// The access method's handler. pgrx cannot declare `RETURNS table_am_handler`, so the
    /// SQL is written here; `@FUNCTION_NAME@` is the generated wrapper symbol.
    #[pg_extern(sql = "
    CREATE FUNCTION pgcol.handler(internal) RETURNS table_am_handler
        STRICT LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
    ")]
    fn handler(_fcinfo: pg_sys::FunctionCallInfo) -> pgrx::datum::Internal {
        pgrx::datum::Internal::from(Some(pg_sys::Datum::from(
            crate::am::routine::routine() as *mut pg_sys::TableAmRoutine
        )))
    }

    /// The event trigger that stores `pg_columnar.sort_key` for a CREATE TABLE or ALTER TABLE
    /// that loaded the library, whose utility hook was then too late for it (see
    /// `am::options`).
    #[pg_extern(sql = "
    CREATE FUNCTION pgcol.table_options() RETURNS event_trigger
        LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
    ")]
    fn table_options(fcinfo: pg_sys::FunctionCallInfo) -> pgrx::datum::Internal {
        // SAFETY: `fcinfo` is this call's own (pgrx passes it on); `event_trigger` acts only if
        // its context is an event trigger's data.
        unsafe { crate::am::options::event_trigger(fcinfo) };
        pgrx::datum::Internal::from(None)
    }

    /// The event trigger that refuses a statement which put a pg_columnar table into a
    /// publication by name, and warns of a publication of all tables or schemas that covers
    /// one (see `am::publication`).
    #[pg_extern(sql = "
    CREATE FUNCTION pgcol.check_publications() RETURNS event_trigger
        LANGUAGE c AS 'MODULE_PATHNAME', '@FUNCTION_NAME@';
    ")]
    fn check_publications(fcinfo: pg_sys::FunctionCallInfo) -> pgrx::datum::Internal {
        // SAFETY: `fcinfo` is this call's own (pgrx passes it on); `event_trigger` acts only if
        // its context is an event trigger's data.
        unsafe { crate::am::publication::event_trigger(fcinfo) };
        pgrx::datum::Internal::from(None)
    }
}

extension_sql!(
    r#"
CREATE ACCESS METHOD pg_columnar TYPE TABLE HANDLER pgcol.handler;
COMMENT ON ACCESS METHOD pg_columnar IS 'columnar storage: 1024-row vectors, each column encoded by dictionary, bitpack, FSST or Gorilla';

-- Storage ids: every new storage of a pg_columnar table (its first stripe after CREATE or
-- TRUNCATE) takes the next one, so catalog rows of a dropped storage never match a new one.
CREATE SEQUENCE pgcol.storage_id_seq;

-- One row per stripe; PostgreSQL's MVCC on these rows decides which stripes a snapshot sees.
-- Written and read only by the access method (no privileges are granted). It is a
-- materialized view, populated and empty, so that it is heap storage with MVCC and indexes
-- like a table, but never part of a publication (FOR ALL TABLES takes tables only), and
-- no SQL DML can change it (PostgreSQL refuses DML on a materialized view; the extension
-- refuses REFRESH of this one). Its inserts are not logically decoded either.
CREATE MATERIALIZED VIEW pgcol.stripe AS
    SELECT NULL::bigint AS storage_id, NULL::bigint AS first_row, NULL::bigint AS row_count,
           NULL::bigint AS first_block, NULL::bigint AS byte_length, NULL::bigint AS prefix_length,
           NULL::bigint AS prefix_checksum, NULL::bytea AS zones, NULL::boolean AS vacuumed,
           NULL::bytea AS absent, NULL::bigint AS original_xid
    WHERE false
    WITH DATA;
CREATE INDEX stripe_storage_first_row ON pgcol.stripe (storage_id, first_row);
REVOKE ALL ON pgcol.stripe FROM PUBLIC;

-- One row per mark on a row: a row lock (0 FOR KEY SHARE, 1 FOR SHARE, 2 FOR NO KEY UPDATE,
-- 3 FOR UPDATE) or a deletion (4 by a DELETE or a key-changing UPDATE, 5 by another UPDATE,
-- 6 an INSERT ... ON CONFLICT's row taken back after a conflict; an UPDATE's mark names the
-- row number of the new version in successor, -1 for another partition). MVCC on these
-- rows decides which deletions a snapshot sees; writers of a row wait for the running
-- transactions of conflicting marks. A materialized view for the same reasons as
-- pgcol.stripe. In both catalogs original_xid is set on the copies a table rewrite (VACUUM
-- FULL, CLUSTER) makes: the transaction that inserted the stripe's rows or made the mark
-- (2, FrozenTransactionId: every snapshot saw it), which a snapshot older than the rewrite
-- goes by (see storage::scan_catalog).
CREATE MATERIALIZED VIEW pgcol.row_mark AS
    SELECT NULL::bigint AS storage_id, NULL::bigint AS row_number, NULL::smallint AS mode,
           NULL::bigint AS successor, NULL::bigint AS original_xid
    WHERE false
    WITH DATA;
CREATE INDEX row_mark_storage_row ON pgcol.row_mark (storage_id, row_number);
REVOKE ALL ON pgcol.row_mark FROM PUBLIC;

-- One row per range of row numbers a running transaction has taken for rows it has not
-- written as a stripe yet, kept only for tables with a unique index: a unique check of
-- another session that meets one of those rows' index entries finds the range and waits for
-- its transaction, as it waits for a heap tuple whose inserter runs. Each transaction
-- deletes its own ranges when it commits (its stripes then cover the rows). A materialized
-- view for the same reasons as pgcol.stripe.
CREATE MATERIALIZED VIEW pgcol.row_reservation AS
    SELECT NULL::bigint AS storage_id, NULL::bigint AS first_row, NULL::bigint AS row_count
    WHERE false
    WITH DATA;
CREATE INDEX row_reservation_storage_first_row ON pgcol.row_reservation (storage_id, first_row);
REVOKE ALL ON pgcol.row_reservation FROM PUBLIC;
-- Logical decoding skips the changes of a relation whose relrewrite is set (PostgreSQL's mark
-- of a table rewrite's transient table; nothing else reads it). The catalogs' inserts are
-- logged as not for decoding, but a heap delete is always decoded: without the mark, every
-- deletion of a catalog row would reach test_decoding and wal2json as a change of pgcol.*
-- (pgoutput publishes no materialized view). A table's own changes are decoded through
-- pg_columnar's WAL records (see am::logical).
UPDATE pg_catalog.pg_class SET relrewrite = oid
 WHERE oid IN ('pgcol.stripe'::regclass, 'pgcol.row_mark'::regclass, 'pgcol.row_reservation'::regclass);
-- Anyone may call the inspection functions; each checks SELECT on the table it is given.
GRANT USAGE ON SCHEMA pgcol TO PUBLIC;
REVOKE ALL ON SEQUENCE pgcol.storage_id_seq FROM PUBLIC;

-- Loads the library at the start of DDL, so that its drop hook sees a pg_columnar table
-- dropped by a backend that has not used one yet (and deletes the table's catalog rows).
CREATE FUNCTION pgcol.load_library() RETURNS event_trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
    AS $$ BEGIN PERFORM pgcol.version(); END $$;
CREATE EVENT TRIGGER pgcol_load_library ON ddl_command_start
    WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP EXTENSION', 'DROP MATERIALIZED VIEW')
    EXECUTE FUNCTION pgcol.load_library();

-- Table options (pg_columnar.sort_key) of a CREATE TABLE or ALTER TABLE that is the first
-- statement to load the library (pg_restore's CREATE TABLE): taken out at the start, stored
-- at the end. Once loaded, the library's utility hook does this itself.
CREATE EVENT TRIGGER pgcol_table_options_start ON ddl_command_start
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE') EXECUTE FUNCTION pgcol.table_options();
CREATE EVENT TRIGGER pgcol_table_options_end ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE') EXECUTE FUNCTION pgcol.table_options();

-- Logical decoding does not see a pg_columnar table's changes: a statement that puts one
-- into a publication by name is refused when it ends (see also the write callbacks, which
-- refuse a write any publication would publish).
CREATE EVENT TRIGGER pgcol_check_publications ON ddl_command_end
    WHEN TAG IN ('CREATE PUBLICATION', 'ALTER PUBLICATION', 'CREATE TABLE', 'ALTER TABLE')
    EXECUTE FUNCTION pgcol.check_publications();
"#,
    name = "access_method",
    requires = [
        pgcol::handler,
        pgcol::version,
        pgcol::table_options,
        pgcol::check_publications
    ]
);

extension_sql!(
    r#"
-- The time-series lifecycle (docs/OPERATIONS.md, "Time partitions"): recent partitions of a
-- table partitioned by time stay heap; older ones are converted to pg_columnar by a policy.

-- Each partition of `parent` (sub-partitions after their partition's level): access method
-- (NULL for a partitioned one), bounds, rows as ANALYZE or VACUUM last counted them (NULL if
-- never), size (pg_total_relation_size: indexes included, pg_columnar's catalog rows not)
-- and bytes per row.
CREATE FUNCTION pgcol.partitions(parent regclass)
RETURNS TABLE (partition regclass, access_method name, bounds text, rows bigint, bytes bigint,
               bytes_per_row numeric)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT c.oid::regclass, am.amname, pg_get_expr(c.relpartbound, c.oid),
           CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint END,
           pg_total_relation_size(c.oid),
           round(pg_total_relation_size(c.oid) / nullif(greatest(c.reltuples, 0), 0)::numeric, 2)
      FROM pg_partition_tree(parent) t
      JOIN pg_class c ON c.oid = t.relid
      LEFT JOIN pg_am am ON am.oid = c.relam
     WHERE t.level > 0
     ORDER BY t.level, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.relname
$$;

-- Converts to pg_columnar every partition of `parent` (a table partitioned by range on one
-- date or timestamp column) whose upper bound is at most now() - older_than, with the sort
-- key if one is given, one partition per transaction: ALTER TABLE ... SET ACCESS METHOD,
-- then COMMIT, so an interruption loses at most the partition being converted and a second
-- call goes on where the first stopped (pg_columnar partitions are skipped). A partition
-- that is itself partitioned has each of its leaves converted. The default partition (no
-- upper bound) and one bounded by MAXVALUE are left alone, with a NOTICE. Each conversion
-- takes what SET ACCESS METHOD takes (an ACCESS EXCLUSIVE lock on that partition, for the
-- rewrite) and a NOTICE reports it. CALL it outside a transaction block (as pg_cron does).
CREATE PROCEDURE pgcol.convert_partitions(parent regclass, older_than interval,
                                          sort_key text DEFAULT NULL)
LANGUAGE plpgsql AS $proc$
DECLARE
    key_type regtype;
    cutoff_ok boolean;
    child record;
    leaf regclass;
    upper text;
    before bigint;
    converted int := 0;
BEGIN
    SELECT a.atttypid::regtype INTO key_type
      FROM pg_catalog.pg_partitioned_table pt
      JOIN pg_catalog.pg_attribute a ON a.attrelid = pt.partrelid AND a.attnum = pt.partattrs[0]
     WHERE pt.partrelid = parent AND pt.partstrat = 'r' AND pt.partnatts = 1;
    IF key_type IS NULL OR key_type NOT IN ('date'::regtype, 'timestamp'::regtype, 'timestamptz'::regtype) THEN
        RAISE EXCEPTION 'pgcol.convert_partitions: % is not partitioned by range on one date or timestamp column', parent
            USING ERRCODE = 'wrong_object_type';
    END IF;
    FOR child IN
        SELECT i.inhrelid::regclass AS part, pg_catalog.pg_get_expr(c.relpartbound, c.oid) AS bound,
               c.relkind
          FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = parent
         ORDER BY 2
    LOOP
        upper := (pg_catalog.regexp_match(child.bound, $r$ TO \('(.*)'\)$$r$))[1];
        IF upper IS NULL THEN
            RAISE NOTICE 'pgcol.convert_partitions: % left alone: it has no upper bound (%)', child.part, child.bound;
            CONTINUE;
        END IF;
        EXECUTE pg_catalog.format('SELECT %L::%s <= (pg_catalog.now() - %L::interval)::%s',
                                  upper, key_type, older_than, key_type) INTO cutoff_ok;
        CONTINUE WHEN NOT cutoff_ok;
        FOR leaf IN
            SELECT t.relid::regclass FROM pg_catalog.pg_partition_tree(child.part) t
              JOIN pg_catalog.pg_class c ON c.oid = t.relid
              LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
             WHERE t.isleaf AND c.relkind = 'r' AND am.amname IS DISTINCT FROM 'pg_columnar'
             ORDER BY 1
        LOOP
            before := pg_catalog.pg_total_relation_size(leaf);
            IF sort_key IS NULL THEN
                EXECUTE pg_catalog.format('ALTER TABLE %s SET ACCESS METHOD pg_columnar', leaf);
            ELSE
                EXECUTE pg_catalog.format('ALTER TABLE %s SET ACCESS METHOD pg_columnar, SET (pg_columnar.sort_key = %L)',
                                          leaf, sort_key);
            END IF;
            RAISE NOTICE 'pgcol.convert_partitions: % converted to pg_columnar, % bytes to %',
                leaf, before, pg_catalog.pg_total_relation_size(leaf);
            converted := converted + 1;
            COMMIT;
        END LOOP;
    END LOOP;
    RAISE NOTICE 'pgcol.convert_partitions: % partition(s) of % converted', converted, parent;
END
$proc$;
"#,
    name = "partitions",
    requires = ["access_method"]
);
