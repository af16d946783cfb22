"""Schedules' rows: what the API lists and checks tenancy on, and what each firing reads. Temporal holds the
schedules themselves (services/schedules/)."""

from __future__ import annotations

import asyncpg

from contracts.records.pages import Page
from contracts.records.schedules import ScheduleSpec, StoredSchedule
from infra.store import rows

COLUMNS = (
    "id, task_id, task_version, cron, timezone, every, input, overlap, catchup_window, paused, "
    "created_at, updated_at"
)


class ScheduleStore:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool

    async def create(
        self, developer_id: str, id_: str, task_id: str, spec: ScheduleSpec, paused: bool, limit: int
    ) -> StoredSchedule | None:
        """The new schedule; None when the developer already has `limit` of them (0: no limit). Creates of one
        developer take turns (a lock for the transaction): two at once would each count the other's row out
        and both be kept past the limit."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext('schedules'), hashtext($1))", developer_id
            )
            row = await conn.fetchrow(
                "INSERT INTO schedules (id, developer_id, task_id, task_version, cron, timezone, every, input, "
                "overlap, catchup_window, paused) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 "
                "WHERE $12 = 0 OR (SELECT count(*) FROM schedules WHERE developer_id = $2) < $12 "
                f"RETURNING {COLUMNS}",
                id_,
                developer_id,
                task_id,
                *_spec_values(spec),
                paused,
                limit,
            )
        return schedule_of(row) if row is not None else None

    async def get(self, developer_id: str, id_: str) -> StoredSchedule | None:
        row = await self.pool.fetchrow(
            f"SELECT {COLUMNS} FROM schedules WHERE developer_id = $1 AND id = $2", developer_id, id_
        )
        return None if row is None else schedule_of(row)

    async def owned(self, id_: str) -> tuple[str, StoredSchedule] | None:
        """A schedule and its developer, whoever that is: for the worker, whose firing names only the
        schedule (contracts/schedules.py schedule_of_run)."""
        row = await self.pool.fetchrow(f"SELECT developer_id, {COLUMNS} FROM schedules WHERE id = $1", id_)
        return None if row is None else (str(row["developer_id"]), schedule_of(row))

    async def for_task(self, developer_id: str, task_id: str, page: Page) -> list[StoredSchedule]:
        found = await self.pool.fetch(
            f"SELECT {COLUMNS} FROM schedules WHERE developer_id = $1 AND task_id = $2 "
            f"ORDER BY {page.order()} LIMIT $3 OFFSET $4",
            developer_id,
            task_id,
            page.limit,
            page.offset,
        )
        return [schedule_of(r) for r in found]

    async def ids_for_task(self, developer_id: str, task_id: str) -> list[str]:
        found = await self.pool.fetch(
            "SELECT id FROM schedules WHERE developer_id = $1 AND task_id = $2", developer_id, task_id
        )
        return [str(r["id"]) for r in found]

    async def update(
        self, developer_id: str, id_: str, spec: ScheduleSpec, paused: bool
    ) -> StoredSchedule | None:
        row = await self.pool.fetchrow(
            "UPDATE schedules SET task_version = $3, cron = $4, timezone = $5, every = $6, input = $7, "
            "overlap = $8, catchup_window = $9, paused = $10, updated_at = now() "
            f"WHERE developer_id = $1 AND id = $2 RETURNING {COLUMNS}",
            developer_id,
            id_,
            *_spec_values(spec),
            paused,
        )
        return None if row is None else schedule_of(row)

    async def delete(self, developer_id: str, id_: str) -> bool:
        result: str = await self.pool.execute(
            "DELETE FROM schedules WHERE developer_id = $1 AND id = $2", developer_id, id_
        )
        return result != "DELETE 0"


def _spec_values(spec: ScheduleSpec) -> tuple[object, ...]:
    """The spec in the column order of the writes above (task_version first)."""
    return (
        spec.task_version,
        spec.cron,
        spec.timezone,
        spec.every,
        spec.input,
        spec.overlap,
        spec.catchup_window,
    )


def schedule_of(row: asyncpg.Record) -> StoredSchedule:
    fields = rows.record(row)
    version = fields.get("task_version")
    return StoredSchedule(
        id=rows.text(fields, "id"),
        task_id=rows.text(fields, "task_id"),
        spec=ScheduleSpec(
            cron=rows.optional_text(fields, "cron"),
            timezone=rows.optional_text(fields, "timezone"),
            every=rows.optional_text(fields, "every"),
            input=rows.json_value(fields, "input"),
            overlap=rows.text(fields, "overlap"),
            catchup_window=rows.optional_text(fields, "catchup_window"),
            task_version=None if version is None else rows.integer(fields, "task_version"),
        ),
        paused=fields["paused"] is True,
        created_at=rows.moment(fields, "created_at"),
        updated_at=rows.moment(fields, "updated_at"),
    )
