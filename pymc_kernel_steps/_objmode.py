"""A PyTensor ``Op`` evaluated in Python, run under PyTensor's numba backend as one
``numba.objmode`` call: lean, and without the generic fall-back's object-mode warning (which
builds output storage around ``perform``)."""

from __future__ import annotations

from collections.abc import Callable


def register_objmode(op_class: type, make_call: Callable, tuple_output: bool = False) -> None:
    """Register for ``op_class`` (an ``Op`` of one or two inputs) the numba implementation
    that calls ``make_call(op)``, a Python function of the node's inputs returning its output
    (a tuple of its outputs with ``tuple_output``), in one ``objmode`` block."""
    try:
        import numba
        from pytensor.link.numba.dispatch import numba_funcify
        from pytensor.link.numba.dispatch.basic import get_numba_type, numba_njit
    except ImportError:  # pragma: no cover - numba comes with pytensor
        return

    @numba_funcify.register(op_class)
    def _numba_funcify(op, node=None, **kwargs):
        types = [get_numba_type(out.type) for out in node.outputs]
        ret_sig = numba.types.Tuple(types) if tuple_output else types[0]
        call = make_call(op)
        if len(node.inputs) == 1:

            @numba_njit
            def objmode_call(x):
                with numba.objmode(ret=ret_sig):
                    ret = call(x)
                return ret

        else:

            @numba_njit
            def objmode_call(x, y):
                with numba.objmode(ret=ret_sig):
                    ret = call(x, y)
                return ret

        return objmode_call
