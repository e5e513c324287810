"""Schema extensions' hooks, found once per extension class rather than on every operation.

Strawberry's runner looks up each extension's hook for each phase of every operation,
wraps each in a new context manager function and enters every phase through an exit
stack. ``PlannedHooksRunner`` finds each class's hook for a phase once and makes the same
context manager from it; a phase with no hook is entered as nothing, one with a single
hook as that hook alone, several through Strawberry's exit stack (docs/design.md, 12).
"""

from __future__ import annotations

import contextlib
import inspect
from asyncio import iscoroutinefunction
from collections.abc import AsyncIterator, Callable, Iterator
from types import TracebackType
from typing import Any

from strawberry.extensions import SchemaExtension

from signoff.internals import (
    ExecutingContextManager,
    ExtensionContextManagerBase,
    OperationContextManager,
    ParsingContextManager,
    SchemaExtensionsRunner,
    ValidationContextManager,
    WrappedHook,
)

# What makes a hook's context manager from its extension, and whether it is asynchronous.
_Plan = tuple[Callable[[SchemaExtension], Any], bool]
_PLANS: dict[tuple[type[SchemaExtension], str], _Plan | None] = {}


def _plan(extension_type: type[SchemaExtension], hook_name: str) -> _Plan | None:
    """Strawberry's ``ExtensionContextManagerBase.get_hook``, for a class: the extension
    class's hook for the phase as a factory of its context manager (None: no hook)."""
    key = (extension_type, hook_name)
    if key in _PLANS:
        return _PLANS[key]
    hook = getattr(extension_type, hook_name)
    plan: _Plan | None = None
    if hook is not getattr(SchemaExtension, hook_name):
        if inspect.isgeneratorfunction(hook):
            plan = (contextlib.contextmanager(hook), False)
        elif inspect.isasyncgenfunction(hook):
            plan = (contextlib.asynccontextmanager(hook), True)
        elif callable(hook):
            plan = _from_callable(hook)
        else:
            raise ValueError(
                f"Hook {hook_name} on {extension_type} must be callable, received {hook!r}"
            )
    _PLANS[key] = plan
    return plan


def _from_callable(hook: Callable[[SchemaExtension], Any]) -> _Plan:
    """Strawberry's ``from_callable``: a plain hook runs as its phase begins."""
    if iscoroutinefunction(hook):

        @contextlib.asynccontextmanager
        async def awaited(extension: SchemaExtension) -> AsyncIterator[None]:
            await hook(extension)
            yield

        return awaited, True

    @contextlib.contextmanager
    def called(extension: SchemaExtension) -> Iterator[None]:
        hook(extension)
        yield

    return called, False


class _NoHook:
    """A phase no extension has a hook for."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *_: object) -> None:
        return None


_NO_HOOK = _NoHook()


class _OneHook:
    """A phase with one extension's hook: that hook's context manager, entered as the
    exit stack of Strawberry's phase enters it. As in Strawberry's phases, a synchronous
    entry refuses an asynchronous hook, and a hook sees what fails inside its phase but
    cannot swallow it (Strawberry's ``__aexit__`` drops the stack's answer)."""

    __slots__ = ("_manager", "hook", "name")

    def __init__(self, hook: WrappedHook, name: str) -> None:
        self.hook = hook
        self.name = name
        self._manager: Any = None

    def __enter__(self) -> None:
        if self.hook.is_async:
            raise RuntimeError(
                f"SchemaExtension hook {self.hook.extension}.{self.name} "
                "failed to complete synchronously."
            )
        self._manager = self.hook.hook()
        self._manager.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self._manager.__exit__(exc_type, exc_val, exc_tb)

    async def __aenter__(self) -> None:
        manager: Any = self.hook.hook()
        self._manager = manager
        if self.hook.is_async:
            await manager.__aenter__()
        else:
            manager.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        manager = self._manager
        if self.hook.is_async:
            await manager.__aexit__(exc_type, exc_val, exc_tb)
        else:
            manager.__exit__(exc_type, exc_val, exc_tb)


class PlannedHooksRunner(SchemaExtensionsRunner):
    """Strawberry's runner, with each phase's hooks found once per extension class."""

    def _phase(self, manager: type[ExtensionContextManagerBase]) -> Any:
        name = manager.HOOK_NAME
        extensions = self.extensions
        plans = _phase_plans(tuple(map(type, extensions)), name)
        if not plans:
            return _NO_HOOK
        hooks = [
            WrappedHook(extensions[index], _bound(make, extensions[index]), is_async)
            for index, make, is_async in plans
        ]
        if len(hooks) == 1:
            return _OneHook(hooks[0], name)
        phase = manager.__new__(manager)
        phase.hooks = hooks
        return phase

    def operation(self) -> OperationContextManager:
        return self._phase(OperationContextManager)  # type: ignore[no-any-return]

    def validation(self) -> ValidationContextManager:
        return self._phase(ValidationContextManager)  # type: ignore[no-any-return]

    def parsing(self) -> ParsingContextManager:
        return self._phase(ParsingContextManager)  # type: ignore[no-any-return]

    def executing(self) -> ExecutingContextManager:
        return self._phase(ExecutingContextManager)  # type: ignore[no-any-return]


# Each phase's hooks for a list of extension classes: (index, factory, asynchronous).
_PHASES: dict[tuple[tuple[type[SchemaExtension], ...], str], list[tuple[int, Any, bool]]] = {}


def _phase_plans(
    types: tuple[type[SchemaExtension], ...], name: str
) -> list[tuple[int, Any, bool]]:
    key = (types, name)
    plans = _PHASES.get(key)
    if plans is None:
        plans = _PHASES[key] = [
            (index, *plan)
            for index, extension_type in enumerate(types)
            if (plan := _plan(extension_type, name)) is not None
        ]
    return plans


def _bound(make: Callable[[SchemaExtension], Any], extension: SchemaExtension) -> Callable[[], Any]:
    return lambda: make(extension)
