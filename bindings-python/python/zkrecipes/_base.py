"""What the public classes share: enum values named as the core names them, and ``with`` /
``async with`` over ``start`` and ``close``."""

from __future__ import annotations

import enum
from types import TracebackType
from typing import Optional, Type, TypeVar

__all__ = ["Name", "Lifecycle"]

_S = TypeVar("_S", bound="Lifecycle")


class Name(str, enum.Enum):
    """An enum whose values are the core's names (``str(x)`` is the name)."""

    def __str__(self) -> str:
        return str(self.value)


class Lifecycle:
    """``with x:`` starts and closes, ``async with x:`` the same through the ``*_async`` twins."""

    def start(self) -> object:
        raise NotImplementedError

    async def start_async(self) -> object:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    async def close_async(self) -> None:
        raise NotImplementedError

    def __enter__(self: _S) -> _S:
        self.start()
        return self

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.close()

    async def __aenter__(self: _S) -> _S:
        await self.start_async()
        return self

    async def __aexit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self.close_async()
