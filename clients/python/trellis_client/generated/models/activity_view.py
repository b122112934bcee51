from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.activity_view_recent_tasks import ActivityViewRecentTasks
    from ..models.activity_view_unfinished_tasks import ActivityViewUnfinishedTasks
    from ..models.key_queue_view import KeyQueueView
    from ..models.minute_view import MinuteView
    from ..models.queue_view import QueueView
    from ..models.tool_activity_view import ToolActivityView


T = TypeVar("T", bound="ActivityView")


@_attrs_define
class ActivityView:
    """`GET /stats/activity`: the last hour's work and the queue now (the dashboard's overview).

    Attributes:
        in_flight (int): Steps and decisions the live workers held at their last heartbeat.
        minutes (list[MinuteView]): Attempts finished per minute over the last hour, oldest first; minutes with none are
            left out.
        oldest_transaction_secs (float): Age in seconds of the oldest open transaction on the database, any session the
            server's role may see (0 when none): rows a newer transaction deleted or updated cannot
            be vacuumed while it stays open, and a long one slows every queue (docs/sql-reporting.md, "Long reports").
        queue (list[QueueView]): Ready and running steps per tool, with how long the oldest ready one has waited (the
            queue lag).
        queue_by_key (list[KeyQueueView]): Ready and running steps per concurrency key: the 20 keys with the most, then
            `others` (the rest summed).
        queue_by_tenant (list[KeyQueueView]): Ready and running steps per tenant (`key` is the tenant): the 20 with the
            most, then
            `others`.
        recent_cap (int): Where the counts of `recent_tasks` stop.
        recent_tasks (ActivityViewRecentTasks): Tasks submitted in the last hour by their status now, every status
            present. A count
            above `recent_cap` is reported as `recent_cap + 1` (shown as "more than").
        tools (list[ToolActivityView]): Per tool: attempts finished over the last hour, failures, and their duration.
        unfinished_tasks (ActivityViewUnfinishedTasks): Unfinished tasks by status, every unfinished status present
            (exact, through the status
            index: the cost follows the live work).
        workers (int): Live workers.
    """

    in_flight: int
    minutes: list[MinuteView]
    oldest_transaction_secs: float
    queue: list[QueueView]
    queue_by_key: list[KeyQueueView]
    queue_by_tenant: list[KeyQueueView]
    recent_cap: int
    recent_tasks: ActivityViewRecentTasks
    tools: list[ToolActivityView]
    unfinished_tasks: ActivityViewUnfinishedTasks
    workers: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        in_flight = self.in_flight

        minutes = []
        for minutes_item_data in self.minutes:
            minutes_item = minutes_item_data.to_dict()
            minutes.append(minutes_item)

        oldest_transaction_secs = self.oldest_transaction_secs

        queue = []
        for queue_item_data in self.queue:
            queue_item = queue_item_data.to_dict()
            queue.append(queue_item)

        queue_by_key = []
        for queue_by_key_item_data in self.queue_by_key:
            queue_by_key_item = queue_by_key_item_data.to_dict()
            queue_by_key.append(queue_by_key_item)

        queue_by_tenant = []
        for queue_by_tenant_item_data in self.queue_by_tenant:
            queue_by_tenant_item = queue_by_tenant_item_data.to_dict()
            queue_by_tenant.append(queue_by_tenant_item)

        recent_cap = self.recent_cap

        recent_tasks = self.recent_tasks.to_dict()

        tools = []
        for tools_item_data in self.tools:
            tools_item = tools_item_data.to_dict()
            tools.append(tools_item)

        unfinished_tasks = self.unfinished_tasks.to_dict()

        workers = self.workers

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "in_flight": in_flight,
                "minutes": minutes,
                "oldest_transaction_secs": oldest_transaction_secs,
                "queue": queue,
                "queue_by_key": queue_by_key,
                "queue_by_tenant": queue_by_tenant,
                "recent_cap": recent_cap,
                "recent_tasks": recent_tasks,
                "tools": tools,
                "unfinished_tasks": unfinished_tasks,
                "workers": workers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.activity_view_recent_tasks import ActivityViewRecentTasks
        from ..models.activity_view_unfinished_tasks import ActivityViewUnfinishedTasks
        from ..models.key_queue_view import KeyQueueView
        from ..models.minute_view import MinuteView
        from ..models.queue_view import QueueView
        from ..models.tool_activity_view import ToolActivityView

        d = dict(src_dict)
        in_flight = d.pop("in_flight")

        minutes = []
        _minutes = d.pop("minutes")
        for minutes_item_data in _minutes:
            minutes_item = MinuteView.from_dict(minutes_item_data)

            minutes.append(minutes_item)

        oldest_transaction_secs = d.pop("oldest_transaction_secs")

        queue = []
        _queue = d.pop("queue")
        for queue_item_data in _queue:
            queue_item = QueueView.from_dict(queue_item_data)

            queue.append(queue_item)

        queue_by_key = []
        _queue_by_key = d.pop("queue_by_key")
        for queue_by_key_item_data in _queue_by_key:
            queue_by_key_item = KeyQueueView.from_dict(queue_by_key_item_data)

            queue_by_key.append(queue_by_key_item)

        queue_by_tenant = []
        _queue_by_tenant = d.pop("queue_by_tenant")
        for queue_by_tenant_item_data in _queue_by_tenant:
            queue_by_tenant_item = KeyQueueView.from_dict(queue_by_tenant_item_data)

            queue_by_tenant.append(queue_by_tenant_item)

        recent_cap = d.pop("recent_cap")

        recent_tasks = ActivityViewRecentTasks.from_dict(d.pop("recent_tasks"))

        tools = []
        _tools = d.pop("tools")
        for tools_item_data in _tools:
            tools_item = ToolActivityView.from_dict(tools_item_data)

            tools.append(tools_item)

        unfinished_tasks = ActivityViewUnfinishedTasks.from_dict(
            d.pop("unfinished_tasks")
        )

        workers = d.pop("workers")

        activity_view = cls(
            in_flight=in_flight,
            minutes=minutes,
            oldest_transaction_secs=oldest_transaction_secs,
            queue=queue,
            queue_by_key=queue_by_key,
            queue_by_tenant=queue_by_tenant,
            recent_cap=recent_cap,
            recent_tasks=recent_tasks,
            tools=tools,
            unfinished_tasks=unfinished_tasks,
            workers=workers,
        )

        activity_view.additional_properties = d
        return activity_view

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
