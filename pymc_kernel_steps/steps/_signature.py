"""The steps' constructors: each names only the parameters it adds, or whose default it changes,
and passes the rest on to its parent's as ``**shared``, down to
:class:`~pymc_kernel_steps.steps.base.KernelStep`, whose signature declares the parameters every
step shares.

:func:`explicit_signature` gives such a constructor the full signature (its own parameters, then
its parent's, less those it withholds), so that ``inspect.signature``, ``help()`` and editors
show every parameter by name, and checks each call against it: an unknown keyword raises the
``TypeError`` Python raises for an explicit signature, naming the class the user called.
"""

from __future__ import annotations

import functools
import inspect

__all__ = ["explicit_signature"]

_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY


def explicit_signature(cls: type, withheld: tuple[str, ...] = ()) -> None:
    """Replace ``cls.__init__``, if it forwards ``**shared`` to its parent's, by one with the
    full signature: its own positional parameters, the keyword-only ones it adds, then its
    parent's keyword-only ones (with its own default where it repeats one) except ``withheld``
    (the parent's parameters ``cls`` sets itself, such as AdaptiveMetropolis's kernel).

    A constructor with ``*args`` (a pass-through), without ``**shared``, or with a signature of
    its own (a public step's, :func:`._public.public_signature`) is left as it is."""
    init = cls.__dict__["__init__"]
    if "__signature__" in vars(init):
        return
    own = inspect.signature(init).parameters
    kinds = {parameter.kind for parameter in own.values()}
    if inspect.Parameter.VAR_KEYWORD not in kinds or inspect.Parameter.VAR_POSITIONAL in kinds:
        return
    parent = inspect.signature(cls.__mro__[1].__init__).parameters
    if unknown := set(withheld) - set(parent):
        raise TypeError(f"{cls.__name__} withholds parameters it does not inherit: {unknown}")
    parameters = [p for p in own.values() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    parameters += [p for p in own.values() if p.kind is _KEYWORD_ONLY and p.name not in parent]
    parameters += [
        own.get(name, p)
        for name, p in parent.items()
        if p.kind is _KEYWORD_ONLY and name not in withheld
    ]
    signature = inspect.Signature(parameters)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{cls.__name__}.__init__() {error}") from None
        init(self, *args, **kwargs)

    __init__.__signature__ = signature
    cls.__init__ = __init__
