//! SQL functions that show what a pg_columnar table stores: `pgcol.stripes`,
//! `pgcol.columns`, `pgcol.vectors`, `pgcol.encoder_report`, `pgcol.image_hash` and
//! `pgcol.verify`. Each checks that the caller may SELECT from the whole table (column
//! privileges alone do not do) and that no row-level security policy applies to the caller
//! (what is stored describes every row), and sets its own `search_path`. Besides them,
//! `pgcol.kept_stripes` shows the calling backend's cache of stripes for row fetches (no
//! table's contents).

#[pgrx::pg_schema]
mod pgcol {
    use pgrx::prelude::*;
    use pgrx::PgRelation;

    use crate::am::datum::{column_types, ColumnType};
    use crate::am::read::LoadedStripe;
    use crate::am::{relation, scan, write};
    use crate::storage::catalog::StripeRow;
    use crate::storage::pages::{self, PageReader};
    use pg_columnar_codec::{plain, Encoding};

    /// Checks the caller's SELECT privilege and that `rel` is a pg_columnar table, writes this
    /// backend's buffered rows, and returns the stripes the current snapshot sees.
    fn open(rel: &PgRelation) -> Vec<StripeRow> {
        // SAFETY: called by the SQL functions, in a transaction, with the relation pgrx opened
        // (AccessShareLock) for their argument, so `raw` is open for the whole call.
        unsafe {
            let acl = pg_sys::pg_class_aclcheck(
                rel.oid(),
                pg_sys::GetUserId(),
                pg_sys::ACL_SELECT as pg_sys::AclMode,
            );
            if acl != pg_sys::AclResult::ACLCHECK_OK {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    format!("permission denied for table {}", rel.name())
                );
            }
            // what is stored describes every row: where a row-level security policy hides some
            // of them from the caller, nothing is shown
            if pg_sys::check_enable_rls(rel.oid(), pg_sys::InvalidOid, false)
                == pg_sys::CheckEnableRlsResult::RLS_ENABLED as i32
            {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                    format!("pg_columnar: cannot inspect table {}: row-level security applies to the current user", rel.name())
                );
            }
            let raw = rel.as_ptr();
            if !relation::is_columnar(raw) {
                ereport!(
                    ERROR,
                    PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
                    format!("\"{}\" is not a pg_columnar table", rel.name())
                );
            }
            write::flush_relation(raw);
            scan::visible_stripes(raw, scan::current_snapshot())
        }
    }

    /// The row numbers the current snapshot finds deleted, ascending (none to look up
    /// without stripes).
    fn deleted_rows(rel: &PgRelation, stripes: &[StripeRow]) -> Vec<u64> {
        match crate::storage::meta::read(rel.as_ptr()) {
            Some(m) if !stripes.is_empty() => crate::storage::marks::deleted_rows(
                m.storage_id,
                scan::current_snapshot(),
                std::ptr::null_mut(),
            ),
            _ => Vec::new(),
        }
    }

    /// The stripes the current snapshot sees; `row_count` counts the row numbers of each
    /// stripe's range, `deleted_rows` those the snapshot finds deleted, `absent_rows` those
    /// that hold no row (removed by VACUUM, or never given to a row).
    #[pg_extern(strict, stable)]
    #[search_path(pg_catalog, pg_temp)]
    fn stripes(
        rel: PgRelation,
    ) -> TableIterator<
        'static,
        (
            name!(first_row, i64),
            name!(row_count, i64),
            name!(deleted_rows, i64),
            name!(absent_rows, i64),
            name!(first_block, i64),
            name!(pages, i64),
            name!(byte_length, i64),
            name!(directory_length, i64),
        ),
    > {
        let stripes = open(&rel);
        let deleted = deleted_rows(&rel, &stripes);
        let rows: Vec<_> = stripes
            .into_iter()
            .map(|s| {
                (
                    s.first_row as i64,
                    s.row_count as i64,
                    crate::storage::marks::rows_in(&deleted, s.first_row, s.row_count).len() as i64,
                    crate::storage::catalog::absent_count(&s) as i64,
                    s.first_block as i64,
                    pages::pages_for(s.byte_length as usize) as i64,
                    s.byte_length as i64,
                    s.prefix_length as i64,
                )
            })
            .collect();
        TableIterator::new(rows)
    }

    /// Per column: vectors, rows, NULLs, raw (plain) and stored bytes, and how many vectors chose
    /// each encoding (`all_null` counts vectors without a non-null value).
    #[pg_extern(strict, stable)]
    #[search_path(pg_catalog, pg_temp)]
    #[allow(clippy::type_complexity)]
    fn columns(
        rel: PgRelation,
    ) -> TableIterator<
        'static,
        (
            name!(attnum, i32),
            name!(vectors, i64),
            name!(rows, i64),
            name!(nulls, i64),
            name!(raw_bytes, i64),
            name!(stored_bytes, i64),
            name!(plain, i64),
            name!(dictionary, i64),
            name!(bitpack, i64),
            name!(fsst, i64),
            name!(gorilla, i64),
            name!(float_int, i64),
            name!(all_null, i64),
        ),
    > {
        let stripes = open(&rel);
        let raw = rel.as_ptr();
        // SAFETY: `raw` is the relation pgrx opened for the argument, open for the call.
        let types = column_types(unsafe { (*raw).rd_att });
        let mut stats = vec![[0i64; 12]; types.len()];
        let mut pages = PageReader::new(raw, true);
        let mut buf = Vec::new();
        for row in stripes {
            let mut stripe = LoadedStripe::load(&mut pages, row);
            for c in 0..stripe.dir.columns.len().min(types.len()) {
                let s = &mut stats[c];
                for (v, e) in stripe.dir.vectors(c).to_vec().iter().enumerate() {
                    s[0] += 1;
                    s[1] += stripe.dir.vector_rows(v) as i64;
                    s[2] += e.null_count as i64;
                    s[4] += e.length as i64;
                    if types[c] != ColumnType::Dropped {
                        let vector = stripe.decode(&mut pages, c, v, types[c], &mut buf);
                        s[3] += plain::raw_len(&vector.values.as_ref()) as i64;
                    }
                    let slot = match e.encoding {
                        Some(Encoding::Plain) => 5,
                        Some(Encoding::Dictionary) => 6,
                        Some(Encoding::Bitpack) => 7,
                        Some(Encoding::Fsst) => 8,
                        Some(Encoding::Gorilla) => 9,
                        Some(Encoding::FloatInt) => 10,
                        None => 11,
                    };
                    s[slot] += 1;
                }
                // the column's shared FSST table and dictionary count as stored bytes
                let col = &stripe.dir.columns[c];
                stats[c][4] += (col.fsst.map_or(0, |e| e.length)
                    + col.dictionary.map_or(0, |e| e.length)) as i64;
            }
        }
        let rows: Vec<_> = stats
            .into_iter()
            .enumerate()
            .filter(|(c, _)| types[*c] != ColumnType::Dropped)
            .map(|(c, s)| {
                (
                    (c + 1) as i32,
                    s[0],
                    s[1],
                    s[2],
                    s[3],
                    s[4],
                    s[5],
                    s[6],
                    s[7],
                    s[8],
                    s[9],
                    s[10],
                    s[11],
                )
            })
            .collect();
        TableIterator::new(rows)
    }

    /// xxhash64 (hex) of the table's canonical image: for every stripe the current snapshot sees,
    /// in row order, its length (u64, little-endian) and its bytes (header, directory, column
    /// contexts, vectors), with no page headers or LSNs. Equal rows loaded the same way give the
    /// same hash on every build that keeps the format, every PostgreSQL major and every CPU.
    #[pg_extern(strict, stable)]
    #[search_path(pg_catalog, pg_temp)]
    fn image_hash(rel: PgRelation) -> String {
        let stripes = open(&rel);
        let raw = rel.as_ptr();
        let mut pages = PageReader::new(raw, true);
        let mut hasher = xxhash_rust::xxh64::Xxh64::new(0);
        let mut buf = Vec::new();
        for row in stripes {
            // loading checks the directory against the catalog's checksum
            LoadedStripe::load(&mut pages, row.clone());
            pages.read(row.first_block, 0, row.byte_length as usize, &mut buf);
            hasher.update(&row.byte_length.to_le_bytes());
            hasher.update(&buf);
        }
        format!("{:016x}", hasher.digest())
    }

    /// Walks every stripe the current snapshot sees and decodes every vector, checking every
    /// checksum, length and kind; raises an ERROR naming the relation and stripe at the first
    /// problem. Returns what it checked.
    #[pg_extern(strict, stable)]
    #[search_path(pg_catalog, pg_temp)]
    fn verify(
        rel: PgRelation,
    ) -> TableIterator<'static, (name!(stripes, i64), name!(vectors, i64), name!(rows, i64))> {
        let stripes = open(&rel);
        let raw = rel.as_ptr();
        // SAFETY: `raw` is the relation pgrx opened for the argument, open for the call.
        let types = column_types(unsafe { (*raw).rd_att });
        let mut pages = PageReader::new(raw, true);
        let mut buf = Vec::new();
        let (mut vectors, mut rows) = (0i64, 0i64);
        let mut last_row_end = 0;
        let mut blocks: Vec<(u32, u32)> = Vec::new();
        for row in &stripes {
            if row.first_row < last_row_end {
                crate::storage::corrupt(
                    raw,
                    format!(
                        "stripe at row {} overlaps the previous stripe's rows",
                        row.first_row
                    ),
                );
            }
            last_row_end = row.first_row + row.row_count;
            blocks.push((
                row.first_block,
                row.first_block + pages::pages_for(row.byte_length as usize),
            ));
            let mut stripe = LoadedStripe::load(&mut pages, row.clone());
            for (c, ty) in types.iter().enumerate().take(stripe.dir.columns.len()) {
                for v in 0..stripe.vector_count() {
                    stripe.decode(&mut pages, c, v, *ty, &mut buf);
                    vectors += 1;
                }
            }
            // a sorted stripe's row positions are checked to be a permutation of its rows
            stripe.row_order(&mut pages, &mut buf);
            rows += (row.row_count - crate::storage::catalog::absent_count(row)) as i64;
        }
        blocks.sort();
        if blocks.first().is_some_and(|b| b.0 == 0) {
            crate::storage::corrupt(raw, "a stripe claims block 0, the metapage");
        }
        for w in blocks.windows(2) {
            if w[0].1 > w[1].0 {
                crate::storage::corrupt(
                    raw,
                    format!(
                        "stripes share pages (blocks {}..{} and {}..{})",
                        w[0].0, w[0].1, w[1].0, w[1].1
                    ),
                );
            }
        }
        TableIterator::once((stripes.len() as i64, vectors, rows))
    }

    /// What this backend keeps between statements for its row fetches (index and TID
    /// lookups) and the query engine's scans, how it decodes rows fetched by number, and how
    /// its fetches and scans read delete marks. Shows no table's contents:
    /// * the stripes kept, so that a lookup or a query run again does not read and parse a
    ///   stripe's directory and dictionaries again: how many, about how much memory they
    ///   hold (at most 16 MB), and the scans' stripe loads so far that found their stripe
    ///   kept (`hits`) and that did not (`misses`);
    /// * fetches of a row's old version (an UPDATE's, by TID) read from the index fetch
    ///   that had just returned the row, with its vector decoded (`old_versions_reused`);
    /// * the column dictionaries kept for PgcolTopN's question of which groups a
    ///   stripe holds (at most 4 MB), and the asks that found theirs kept and that did not;
    /// * rows fetched by number (and PgcolTopN's rows) decoded alone, one value of each
    ///   column, and vectors decoded whole for them (when a second row of a vector was
    ///   fetched right after the first);
    /// * rows a unique check or ON CONFLICT found stored in a slot without their values
    ///   (`rows_deferred`), and the column values read for them since, when asked
    ///   (`deferred_columns_read`);
    /// * the reads of delete marks for index fetches: probes of one row
    ///   (`mark_probes`), and windows of 1,024 row numbers read at once when a fetch met a
    ///   second row of one (`mark_windows_read`);
    /// * the reads of scans' delete masks (deleted and absent rows), made a run of stripes at
    ///   a time as a scan reaches them (`mask_reads`), and the stripes they covered
    ///   (`mask_stripes`);
    /// * the rows a unique or exclusion check's fetch found in no stripe it had listed and
    ///   looked for in the catalogs, one probe each (`dead_row_probes`), and those it knew
    ///   dead as numbered by a transaction that rolled back (`dead_rows_rolled_back`).
    #[pg_extern(volatile)]
    #[search_path(pg_catalog, pg_temp)]
    #[allow(clippy::type_complexity)]
    fn kept_stripes() -> TableIterator<
        'static,
        (
            name!(stripes, i64),
            name!(approx_bytes, i64),
            name!(hits, i64),
            name!(misses, i64),
            name!(old_versions_reused, i64),
            name!(dictionaries, i64),
            name!(dictionary_hits, i64),
            name!(dictionary_misses, i64),
            name!(rows_decoded_alone, i64),
            name!(vectors_decoded_whole, i64),
            name!(rows_deferred, i64),
            name!(deferred_columns_read, i64),
            name!(mark_probes, i64),
            name!(mark_windows_read, i64),
            name!(mask_reads, i64),
            name!(mask_stripes, i64),
            name!(dead_row_probes, i64),
            name!(dead_rows_rolled_back, i64),
        ),
    > {
        let (stripes, bytes, hits, misses) = crate::am::read::kept_stats();
        let reused = crate::am::fetch::refetched_from_index_fetch();
        let (dictionaries, dictionary_hits, dictionary_misses) =
            crate::am::read::kept_dictionary_stats();
        let (alone, whole) = crate::am::scan::row_at_a_time_decodes();
        let (deferred, deferred_read) = crate::am::slot::deferred_stats();
        let (mark_probes, mark_windows) = crate::am::fetch::mark_reads();
        let (mask_reads, mask_stripes) = crate::am::mask::reads();
        let (dead_probes, dead_aborted) = crate::am::fetch::dead_checks();
        TableIterator::once((
            stripes as i64,
            bytes as i64,
            hits as i64,
            misses as i64,
            reused as i64,
            dictionaries as i64,
            dictionary_hits as i64,
            dictionary_misses as i64,
            alone as i64,
            whole as i64,
            deferred as i64,
            deferred_read as i64,
            mark_probes as i64,
            mark_windows as i64,
            mask_reads as i64,
            mask_stripes as i64,
            dead_probes as i64,
            dead_aborted as i64,
        ))
    }

    /// This backend's kept reads of the stripe catalog (`storage::catalog::stripe_list`): how
    /// many it keeps now, and how many reads under an MVCC snapshot so far scanned the
    /// catalog and how many were given a kept read of a snapshot of the same content (the
    /// planner's estimates and the scan of one query, and the queries after it until the
    /// table changes). Shows no table's contents.
    #[pg_extern(volatile)]
    #[search_path(pg_catalog, pg_temp)]
    fn kept_catalog_reads() -> TableIterator<
        'static,
        (
            name!(kept, i64),
            name!(catalog_scans, i64),
            name!(reuses, i64),
        ),
    > {
        let (kept, scans, reuses) = crate::storage::catalog::read_stats();
        TableIterator::once((kept as i64, scans as i64, reuses as i64))
    }

    /// What the last VACUUM of a pg_columnar table in this session did (`am::vacuum`):
    /// whether it found a moment without writers (`quiet`: only then does it merge across
    /// row numbers no stripe holds, fill free pages and give back the end of the file),
    /// stripes written and the stripes they replaced, images encoded for them (merges; a
    /// stripe that only loses rows keeps its image), rows removed (deleted for every
    /// snapshot) and row numbers between merged stripes made absent, stripes moved down into
    /// free pages, pages given back, and index entries removed. Shows no table's contents.
    #[pg_extern(volatile)]
    #[search_path(pg_catalog, pg_temp)]
    #[allow(clippy::type_complexity)]
    fn last_vacuum() -> TableIterator<
        'static,
        (
            name!(quiet, bool),
            name!(stripes_written, i64),
            name!(stripes_replaced, i64),
            name!(images_encoded, i64),
            name!(rows_removed, i64),
            name!(gap_rows, i64),
            name!(stripes_moved, i64),
            name!(pages_truncated, i64),
            name!(index_entries_removed, i64),
        ),
    > {
        let r = crate::am::vacuum::last_report();
        TableIterator::once((
            r.quiet,
            r.stripes_written as i64,
            r.stripes_replaced as i64,
            r.images_encoded as i64,
            r.rows_removed as i64,
            r.gap_rows as i64,
            r.stripes_moved as i64,
            r.pages_truncated as i64,
            r.index_entries_removed as i64,
        ))
    }

    /// How each stripe the current snapshot sees is ordered: the sort key it was written
    /// with (`pg_columnar.sort_key`; its columns by their current names, NULL for a stripe
    /// stored in insert order) and how many of its rows are stored elsewhere than their
    /// insert position (a sorted load that came in key order moves none, and is stored
    /// without row positions: NULL key).
    #[pg_extern(strict, stable)]
    #[search_path(pg_catalog, pg_temp)]
    fn sort_order(
        rel: PgRelation,
    ) -> TableIterator<
        'static,
        (
            name!(first_row, i64),
            name!(sort_key, Option<String>),
            name!(rows_moved, i64),
        ),
    > {
        let stripes = open(&rel);
        let raw = rel.as_ptr();
        let names: Vec<String> = (1..=rel.tuple_desc().len())
            // SAFETY: every attnum up to the descriptor's length is one of the table's columns
            // (a dropped one keeps its placeholder name).
            .map(|a| unsafe {
                crate::am::options::key_column_name(rel.oid(), a as pg_sys::AttrNumber)
            })
            .collect();
        let mut pages = PageReader::new(raw, true);
        let mut buf = Vec::new();
        let out: Vec<_> = stripes
            .into_iter()
            .map(|row| {
                let mut stripe = LoadedStripe::load(&mut pages, row.clone());
                let key = stripe.dir.row_positions.as_ref().map(|p| {
                    p.key
                        .iter()
                        .map(|&c| {
                            names
                                .get(c)
                                .cloned()
                                .unwrap_or_else(|| format!("column {}", c + 1))
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                });
                let moved = stripe.row_order(&mut pages, &mut buf).map_or(0, |o| {
                    o.positions()
                        .iter()
                        .enumerate()
                        .filter(|&(i, &p)| i as u32 != p)
                        .count()
                });
                (row.first_row as i64, key, moved as i64)
            })
            .collect();
        TableIterator::new(out)
    }

    /// The stripe directories: per stripe, column and vector, where the vector is, how it is
    /// encoded, its NULL count and its zone map (integers and floats as numbers, byte strings
    /// as hex of the stored bounds, which are at most 32 bytes; `max_truncated` when the
    /// maximum was shortened). The zone map is NULL for a vector that stores a row the
    /// current snapshot does not see: it may be that row's value.
    #[pg_extern(strict, stable)]
    #[search_path(pg_catalog, pg_temp)]
    #[allow(clippy::type_complexity)]
    fn vectors(
        rel: PgRelation,
    ) -> TableIterator<
        'static,
        (
            name!(first_row, i64),
            name!(attnum, i32),
            name!(vector, i32),
            name!(byte_offset, i64),
            name!(byte_length, i64),
            name!(encoding, Option<String>),
            name!(nulls, i32),
            name!(zone_min, Option<String>),
            name!(zone_max, Option<String>),
            name!(max_truncated, bool),
        ),
    > {
        use pg_columnar_codec::stripe::StoredZone;
        let stripes = open(&rel);
        let raw = rel.as_ptr();
        let deleted = deleted_rows(&rel, &stripes);
        let mut pages = PageReader::new(raw, true);
        let mut buf = Vec::new();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let mut out = Vec::new();
        for row in stripes {
            let mut stripe = LoadedStripe::load(&mut pages, row.clone());
            let hidden = vectors_with_hidden_rows(&mut stripe, &mut pages, &mut buf, &deleted);
            for c in 0..stripe.dir.columns.len() {
                for (v, e) in stripe.dir.vectors(c).iter().enumerate() {
                    let (min, max, truncated) = match &e.zone {
                        _ if hidden.get(v).copied().unwrap_or(true) => (None, None, false),
                        StoredZone::Empty => (None, None, false),
                        StoredZone::Int { min, max } => {
                            (Some(min.to_string()), Some(max.to_string()), false)
                        }
                        StoredZone::Float { min, max } => {
                            (Some(min.to_string()), Some(max.to_string()), false)
                        }
                        StoredZone::Bytes {
                            min,
                            max,
                            max_truncated,
                        } => (Some(hex(min)), Some(hex(max)), *max_truncated),
                    };
                    out.push((
                        row.first_row as i64,
                        (c + 1) as i32,
                        v as i32,
                        e.offset as i64,
                        e.length as i64,
                        e.encoding.map(|x| x.name().to_string()),
                        e.null_count as i32,
                        min,
                        max,
                        truncated,
                    ));
                }
            }
        }
        TableIterator::new(out)
    }

    /// Per vector of `stripe`, whether it stores a row the current snapshot does not see
    /// (deleted, or removed by VACUUM: the image keeps its values). Its zone map was computed
    /// over that row's values too, so [`vectors`] must not show it (heap offers no SQL path to
    /// a deleted row's values either).
    fn vectors_with_hidden_rows(
        stripe: &mut LoadedStripe,
        pages: &mut PageReader,
        buf: &mut Vec<u8>,
        deleted: &[u64],
    ) -> Vec<bool> {
        let row = &stripe.row;
        let hidden_offsets: Vec<u64> = row
            .absent
            .iter()
            .flat_map(|&(o, n)| o as u64..o as u64 + n as u64)
            .chain(
                crate::storage::marks::rows_in(deleted, row.first_row, row.row_count)
                    .iter()
                    .map(|&r| r - row.first_row),
            )
            .collect();
        let rows_per_vector = pg_columnar_codec::MAX_ROWS as u64;
        let mut hidden = vec![false; row.row_count.div_ceil(rows_per_vector) as usize];
        let order = stripe.row_order(pages, buf);
        for offset in hidden_offsets {
            // a sorted stripe stores the row at its position in key order
            let position = order.map_or(offset, |o| o.position_of(offset));
            if let Some(h) = hidden.get_mut((position / rows_per_vector) as usize) {
                *h = true;
            }
        }
        hidden
    }

    /// For every vector of every stripe the current snapshot sees: what the encoder did with
    /// it, found by encoding the stripe again from its decoded rows with the stripe writer.
    /// `reencoded_identical` says whether that gives exactly the stored stripe image (it must:
    /// the writer is deterministic); the other columns are the encoder's report for the vector
    /// (chosen encoding, whether FSST was tried or why not, whether the shared dictionary and a
    /// stride block were used, which candidates were sized) and the stripe's row period. The
    /// gate counts these to prove its fixtures engage every mechanism.
    #[pg_extern(strict, stable)]
    #[search_path(pg_catalog, pg_temp)]
    #[allow(clippy::type_complexity)]
    fn encoder_report(
        rel: PgRelation,
    ) -> TableIterator<
        'static,
        (
            name!(first_row, i64),
            name!(attnum, i32),
            name!(vector, i32),
            name!(rows, i32),
            name!(nulls, i32),
            name!(kind, String),
            name!(chosen, Option<String>),
            name!(fsst, String),
            name!(shared_dictionary, bool),
            name!(stride_block, bool),
            name!(period, Option<i32>),
            name!(sized, String),
            name!(reencoded_identical, bool),
        ),
    > {
        use pg_columnar_codec::stripe::{self, ColumnInput};
        use pg_columnar_codec::{FsstDecision, Sizing, Values};
        let stripes = open(&rel);
        let raw = rel.as_ptr();
        // SAFETY: `raw` is the relation pgrx opened for the argument, open for the call.
        let types = column_types(unsafe { (*raw).rd_att });
        let mut pages = PageReader::new(raw, true);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for row in stripes {
            let mut stripe = LoadedStripe::load(&mut pages, row.clone());
            // each stored column, decoded whole: null bitmap over the stripe and its values
            let mut columns: Vec<(Vec<u8>, bool, Values)> = Vec::new();
            for c in 0..stripe.dir.columns.len() {
                let ty = types.get(c).copied().unwrap_or(ColumnType::Dropped);
                let (mut nulls, mut any_null, mut values): (Vec<u8>, bool, Option<Values>) =
                    (Vec::new(), false, None);
                for v in 0..stripe.vector_count() {
                    let vector = stripe.decode(&mut pages, c, v, ty, &mut buf);
                    let rows = vector.rows;
                    let mut bits = vector
                        .nulls
                        .clone()
                        .unwrap_or_else(|| vec![0; rows.div_ceil(8)]);
                    any_null |= vector.nulls.is_some();
                    bits.truncate(rows.div_ceil(8));
                    nulls.extend_from_slice(&bits);
                    values = Some(match values {
                        None => vector.values,
                        Some(acc) => append(acc, vector.values),
                    });
                }
                let values = values.unwrap_or(Values::Int8(Vec::new()));
                columns.push((nulls, any_null, values));
            }
            let mut inputs: Vec<ColumnInput> = columns
                .iter()
                .map(|(n, any, v)| ColumnInput {
                    nulls: any.then_some(&n[..]),
                    values: v.as_ref(),
                })
                .collect();
            // a sorted stripe is encoded again from its rows in insert order, with its key
            let key = stripe
                .dir
                .row_positions
                .as_ref()
                .map_or(Vec::new(), |p| p.key.clone());
            let rows = row.row_count as usize;
            let unsorted: Vec<(Option<Vec<u8>>, Values)> =
                match stripe.row_order(&mut pages, &mut buf) {
                    Some(order) => inputs
                        .iter()
                        .map(|c| pg_columnar_codec::sort::permute(c, order.positions(), rows))
                        .collect(),
                    None => Vec::new(),
                };
            if !unsorted.is_empty() {
                inputs = unsorted
                    .iter()
                    .map(|(n, v)| ColumnInput {
                        nulls: n.as_deref(),
                        values: v.as_ref(),
                    })
                    .collect();
            }
            let mut image = Vec::new();
            let options = stripe::WriteOptions {
                sort_key: key,
                ..Default::default()
            };
            let reports = stripe::write_stripe_with(&inputs, rows, &options, &mut image)
                .unwrap_or_else(|e| {
                    crate::storage::corrupt(
                        raw,
                        format!("stripe at row {} does not encode again: {e}", row.first_row),
                    )
                });
            pages.read(row.first_block, 0, row.byte_length as usize, &mut buf);
            let identical = image == buf;
            for (c, report) in reports.iter().enumerate() {
                for (v, r) in report.vectors.iter().enumerate() {
                    let sized: Vec<&str> = pg_columnar_codec::Encoding::ALL
                        .iter()
                        .filter(|e| !matches!(r.candidates[**e as usize], Sizing::NotTried))
                        .map(|e| e.name())
                        .collect();
                    out.push((
                        row.first_row as i64,
                        (c + 1) as i32,
                        v as i32,
                        r.rows as i32,
                        r.null_count as i32,
                        format!("{:?}", r.kind),
                        r.chosen.map(|e| e.name().to_string()),
                        match r.fsst {
                            FsstDecision::NotApplicable => "not applicable",
                            FsstDecision::NoSymbolTable => "no table",
                            FsstDecision::SkippedBySavings => "skipped (saved 25%)",
                            FsstDecision::Tried => "tried",
                        }
                        .to_string(),
                        r.shared_dictionary
                            && r.chosen == Some(pg_columnar_codec::Encoding::Dictionary),
                        r.stride_block,
                        report.period.map(i32::from),
                        sized.join(","),
                        identical,
                    ));
                }
            }
        }
        TableIterator::new(out)
    }

    /// `a` followed by `b` (vectors of one column have one kind).
    fn append(
        a: pg_columnar_codec::Values,
        b: pg_columnar_codec::Values,
    ) -> pg_columnar_codec::Values {
        use pg_columnar_codec::Values::*;
        match (a, b) {
            (Int8(mut x), Int8(y)) => {
                x.extend(y);
                Int8(x)
            }
            (Int16(mut x), Int16(y)) => {
                x.extend(y);
                Int16(x)
            }
            (Int32(mut x), Int32(y)) => {
                x.extend(y);
                Int32(x)
            }
            (Int64(mut x), Int64(y)) => {
                x.extend(y);
                Int64(x)
            }
            (Float32(mut x), Float32(y)) => {
                x.extend(y);
                Float32(x)
            }
            (Float64(mut x), Float64(y)) => {
                x.extend(y);
                Float64(x)
            }
            (Bytes(mut x), Bytes(y)) => {
                for s in y.as_ref().iter() {
                    x.push(s);
                }
                Bytes(x)
            }
            (Fixed { width, data: mut x }, Fixed { data: y, .. }) => {
                x.extend(y);
                Fixed { width, data: x }
            }
            // an all-NULL vector decodes with no values of the column's kind
            (x, y) if y.is_empty() => x,
            (x, y) if x.is_empty() => y,
            _ => pgrx::error!("pg_columnar: vectors of one column hold different kinds"),
        }
    }
}
