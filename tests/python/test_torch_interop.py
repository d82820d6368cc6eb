"""PyTorch interop: tensors as ndarray arguments used in place, copies
between fields or ndarrays and tensors, kernel.grad into tensors' .grad, and
kernels as autograd functions (qd.ad.torch_function) checked by
torch.autograd.gradcheck."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from quadrants.lang.exception import QuadrantsRuntimeError
from tests import test_utils

torch = pytest.importorskip("torch")


def _device():
    """Where this arch's kernels take tensors from."""
    if runtime.state.arch == qd.cuda:
        if not torch.cuda.is_available():
            pytest.skip("this PyTorch has no CUDA")
        return f"cuda:{runtime.state.options.get('device_id', 0)}"
    return "cpu"


@test_utils.test()
def test_kernel_writes_the_tensor_in_place():
    t = torch.zeros(64, device=_device())
    ptr = t.data_ptr()

    @qd.kernel
    def ramp(a: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            a[i] = 2.0 * i + 1.0

    ramp(t)
    assert t.data_ptr() == ptr
    np.testing.assert_array_equal(t.cpu().numpy(), 2.0 * np.arange(64) + 1.0)
    view = t[10:20]  # a view of the same storage sees the writes too
    np.testing.assert_array_equal(view.cpu().numpy(), 2.0 * np.arange(10, 20) + 1.0)


@test_utils.test()
def test_wrong_dtype_and_ndim_name_the_kernel_and_parameter():
    @qd.kernel
    def k(vel: qd.types.ndarray(qd.f32, 2)):
        for i, j in vel:
            vel[i, j] = 0.0

    with pytest.raises(qd.QuadrantsTypeError, match=r"kernel 'k' argument 'vel'.*f32.*f64"):
        k(torch.zeros(2, 2, dtype=torch.float64, device=_device()))
    with pytest.raises(qd.QuadrantsError, match=r"kernel 'k' argument 'vel'.*2 dimensions"):
        k(torch.zeros(4, device=_device()))
    with pytest.raises(qd.QuadrantsTypeError, match=r"argument 'vel'.*torch dtype"):
        k(torch.zeros(2, 2, dtype=torch.complex64, device=_device()))


@test_utils.test(arch=[qd.cpu, qd.vulkan])
def test_tensor_on_another_device_is_refused():
    @qd.kernel
    def k(a: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            a[i] = 1.0

    with pytest.raises(qd.QuadrantsRuntimeError,
                       match=r"kernel 'k' argument 'a': expected a tensor on cpu.*meta"):
        k(torch.empty(4, device="meta"))


@test_utils.test(arch=[qd.cpu, qd.vulkan])
def test_non_contiguous_tensor_is_refused_saying_so():
    t = torch.zeros(6, 8, device=_device())
    strided = t[:, ::2]  # every other column
    assert not strided.is_contiguous()

    @qd.kernel
    def fill(a: qd.types.ndarray(qd.f32, 2)):
        for i, j in a:
            a[i, j] = i * 10.0 + j

    with pytest.raises(ValueError, match=r"kernel 'fill' argument 'a': Non contiguous tensors "
                                         r"are not supported.*contiguous\(\)"):
        fill(strided)
    assert torch.all(t == 0).item()
    fill(strided.contiguous())  # a copy, as the message says


@test_utils.test()
def test_vector_ndarray_parameter_takes_the_trailing_axis():
    t = torch.zeros(5, 3, device=_device())

    @qd.kernel
    def k(a: qd.types.ndarray(qd.types.vector(3, qd.f32), 1)):
        for i in range(a.shape[0]):
            a[i] = qd.Vector([i, 2 * i, 3 * i])

    k(t)
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(5)[:, None] * [1, 2, 3])
    with pytest.raises(qd.QuadrantsError, match=r"argument 'a'.*trailing shape \(3,\)"):
        k(torch.zeros(5, 2, device=_device()))


@test_utils.test()
def test_round_trips_of_every_field_kind_and_ndarrays():
    rng = np.random.default_rng(0)
    scalar = qd.field(qd.f32, shape=(3, 4), needs_grad=True)
    vec = qd.Vector.field(3, qd.f64, shape=5)
    mat = qd.Matrix.field(2, 3, qd.i32, shape=(2, 2))
    st = qd.Struct.field({"p": qd.f32, "n": qd.i32}, shape=4)
    arr = qd.ndarray(qd.f32, (7,))
    values = {
        scalar: torch.tensor(rng.standard_normal((3, 4)), dtype=torch.float32),
        scalar.grad: torch.tensor(rng.standard_normal((3, 4)), dtype=torch.float32),
        vec: torch.tensor(rng.standard_normal((5, 3))),
        mat: torch.tensor(rng.integers(-9, 9, (2, 2, 2, 3)), dtype=torch.int32),
        arr: torch.tensor(rng.standard_normal(7), dtype=torch.float32),
    }
    for holder, tensor in values.items():
        holder.from_torch(tensor)
        back = holder.to_torch()
        assert back.dtype == tensor.dtype and back.shape == tensor.shape
        assert torch.equal(back, tensor)
    members = {"p": torch.arange(4, dtype=torch.float32), "n": torch.arange(4, dtype=torch.int32)}
    st.from_torch(members)
    back = st.to_torch()
    assert torch.equal(back["p"], members["p"]) and torch.equal(back["n"], members["n"])
    with pytest.raises(ValueError, match="copy=False.*dict of tensors"):
        st.to_torch(copy=False)


@test_utils.test()
def test_kernel_grad_adds_into_the_tensors_grad():
    x = torch.tensor(np.linspace(-1, 1, 16), dtype=torch.float64, device=_device())
    y = torch.zeros(16, dtype=torch.float64, device=_device())

    @qd.kernel
    def square(x: qd.types.ndarray(qd.f64, 1), y: qd.types.ndarray(qd.f64, 1)):
        for i in range(x.shape[0]):
            y[i] = x[i] * x[i] * 3.0

    square(x, y)
    x.grad = torch.zeros_like(x)
    y.grad = torch.ones_like(y)
    square.grad(x, y)
    np.testing.assert_allclose(x.grad.cpu().numpy(), 6.0 * x.cpu().numpy(), rtol=1e-12)
    y.grad = torch.ones_like(y)
    square.grad(x, y)  # adds, as for every adjoint buffer
    np.testing.assert_allclose(x.grad.cpu().numpy(), 12.0 * x.cpu().numpy(), rtol=1e-12)


@test_utils.test()
def test_a_tensor_that_requires_grad_gets_a_zero_grad_at_launch():
    x = torch.ones(4, dtype=torch.float64, device=_device(), requires_grad=True)
    y = torch.zeros(4, dtype=torch.float64, device=_device())

    @qd.kernel
    def double(src: qd.types.ndarray(qd.f64, 1), dst: qd.types.ndarray(qd.f64, 1)):
        for i in range(src.shape[0]):
            dst[i] = 2.0 * src[i]

    double(x, y)
    # A tensor that requires grad gets a zero .grad at launch (upstream's
    # semantics); one that does not gets none.
    assert x.grad is not None and torch.all(x.grad == 0).item()
    assert y.grad is None
    y.grad = torch.ones_like(y)
    double.grad(x, y)
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(4, 2.0))


@test_utils.test()
def test_tape_with_a_tensor_loss_seeds_it_and_checks_it():
    x = torch.tensor([1.0, 2.0, 3.0], device=_device(), requires_grad=True)
    loss = torch.zeros(1, device=_device(), requires_grad=True)

    @qd.kernel
    def squares(a: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            out[0] += a[i] * a[i]

    with qd.ad.Tape(loss=loss):
        squares(x, loss)
    assert loss.item() == 14.0
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(RuntimeError, match="must be a tensor only contains one element"):
        with qd.ad.Tape(loss=torch.zeros(2, device=_device(), requires_grad=True)):
            pass
    with pytest.raises(RuntimeError, match="please set requires_grad=True"):
        with qd.ad.Tape(loss=torch.zeros(1, device=_device())):
            pass
    assert qd.lang.runtime.state.tape is None


@test_utils.test(default_fp=qd.f64)
def test_backward_sees_the_outputs_the_forward_wrote():
    """A kernel that writes an output and reads it back: the gradient
    kernel recomputes over the memory the forward left (as under a Tape),
    so the read sees the written norm, not the caller's starting zeros."""
    @qd.kernel
    def split(p: qd.types.ndarray(qd.math.vec2, 1), norm: qd.types.ndarray(qd.f64, 1),
              scaled: qd.types.ndarray(qd.math.vec2, 1)):
        for i in range(p.shape[0]):
            norm[i] = p[i].norm()
            scaled[i] = p[i] * norm[i]

    layer = qd.ad.torch_function(split, outputs=("norm", "scaled"))
    dev = _device()
    p = torch.tensor(np.random.default_rng(4).uniform(0.5, 1.5, (5, 2)), dtype=torch.float64,
                     device=dev, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda p: layer(p, torch.zeros(5, dtype=torch.float64, device=dev),
                        torch.zeros(5, 2, dtype=torch.float64, device=dev)), (p,),
        eps=1e-6, atol=1e-8)


@test_utils.test(require=qd.extension.adstack, ad_stack_experimental_enabled=True,
                 default_fp=qd.f64)
def test_gradcheck_through_a_dynamic_loop_with_a_torch_trip_count():
    @qd.kernel
    def recurrence(x: qd.types.ndarray(qd.f64, 1), steps: qd.types.ndarray(qd.i32, 1),
                   out: qd.types.ndarray(qd.f64, 1)):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(steps[i]):
                v = qd.sin(v) * 0.9 + x[i]
            out[i] += v

    layer = qd.ad.torch_function(recurrence, outputs="out")
    dev = _device()
    x = torch.tensor([0.1, 0.5, -0.3, 0.8], dtype=torch.float64, device=dev,
                     requires_grad=True)
    steps = torch.tensor([0, 3, 7, 12], dtype=torch.int32, device=dev)
    start = torch.zeros(4, dtype=torch.float64, device=dev, requires_grad=True)

    out = layer(x, steps, start)
    v = x.detach().cpu().numpy().copy()
    for i, n in enumerate([0, 3, 7, 12]):
        for _ in range(n):
            v[i] = np.sin(v[i]) * 0.9 + x[i].item()
    np.testing.assert_allclose(out.detach().cpu().numpy(), v, rtol=1e-12)
    assert torch.equal(start, torch.zeros_like(start))  # the caller's tensor is kept
    assert torch.autograd.gradcheck(lambda a, s: layer(a, steps, s), (x, start),
                                    eps=1e-6, atol=1e-8)


@test_utils.test(arch=[qd.cpu])
def test_dlpack_views_the_ndarray_memory_and_keeps_it_alive():
    a = qd.ndarray(qd.f32, (3, 4))

    @qd.kernel
    def fill(arr: qd.types.ndarray(qd.f32, 2)):
        for i, j in arr:
            arr[i, j] = i * 4 + j

    fill(a)
    t = torch.utils.dlpack.from_dlpack(a.to_dlpack())
    np.testing.assert_array_equal(t.numpy(), np.arange(12).reshape(3, 4))
    t[1, 2] = 42.0  # the same memory, not a copy
    assert a[1, 2] == 42.0
    assert a.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(a)[2], [8, 9, 10, 11])
    capsule = a.to_dlpack()
    del a, t
    import gc  # pylint: disable=import-outside-toplevel
    gc.collect()
    np.testing.assert_array_equal(torch.utils.dlpack.from_dlpack(capsule).numpy().ravel()[:4],
                                  [0, 1, 2, 3])


@test_utils.test(arch=[qd.cpu, qd.cuda])
def test_field_dlpack_shares_memory_for_matrix_and_0d_fields():
    """Fields export their memory through DLPack on cpu and cuda: matrix
    elements on the trailing axes, 0-D fields as 0-D tensors; writes
    through the tensor show in the field."""
    dev = _device()
    m = qd.Matrix.field(2, 3, qd.f32, shape=(4,))
    m.from_numpy(np.arange(24, dtype=np.float32).reshape(4, 2, 3))
    t = torch.utils.dlpack.from_dlpack(m.to_dlpack())
    assert tuple(t.shape) == (4, 2, 3) and t.dtype == torch.float32
    assert t.device == torch.device(dev)
    np.testing.assert_array_equal(t.cpu().numpy(), m.to_numpy())
    t[1, 0, 2] = -7.0
    if dev != "cpu":
        torch.cuda.synchronize()
    assert m[1][0, 2] == -7.0
    s = qd.field(qd.i64, shape=())
    s[None] = 41
    t0 = torch.utils.dlpack.from_dlpack(s.to_dlpack(versioned=False))
    assert tuple(t0.shape) == () and int(t0.item()) == 41


@test_utils.test(arch=[qd.vulkan])
def test_field_dlpack_is_refused_where_memory_is_not_addressable():
    f = qd.Vector.field(3, qd.f32, shape=(2,))
    with pytest.raises(QuadrantsRuntimeError, match="to_dlpack: field"):
        f.to_dlpack()


@test_utils.test(arch=[qd.cpu])
def test_vector_ndarray_exports_its_element_axis():
    v = qd.Vector.ndarray(3, qd.i32, (5,))
    v.from_numpy(np.arange(15, dtype=np.int32).reshape(5, 3))
    t = torch.utils.dlpack.from_dlpack(v.to_dlpack())
    assert t.dtype == torch.int32 and tuple(t.shape) == (5, 3)
    np.testing.assert_array_equal(t.numpy(), np.arange(15).reshape(5, 3))


@test_utils.test(arch=[qd.cpu])
def test_from_dlpack_borrows_the_producers_memory():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = qd.from_dlpack(t)
    assert a.shape == (3, 4) and a.dtype == qd.f32

    @qd.kernel
    def scale(arr: qd.types.ndarray(qd.f32, 2)):
        for i, j in arr:
            arr[i, j] *= 2.0

    scale(a)
    np.testing.assert_array_equal(t.numpy(), 2.0 * np.arange(12).reshape(3, 4))
    del t  # the ndarray keeps the tensor's memory
    import gc  # pylint: disable=import-outside-toplevel
    gc.collect()
    np.testing.assert_array_equal(a.to_numpy(), 2.0 * np.arange(12).reshape(3, 4))
    # numpy arrays and raw capsules work too; strided memory is refused.
    b = np.arange(6, dtype=np.int64)
    np.testing.assert_array_equal(qd.from_dlpack(b).to_numpy(), b)
    with pytest.raises(qd.QuadrantsTypeError, match="not dense and row-major"):
        qd.from_dlpack(torch.zeros(4, 4)[:, ::2])
    with pytest.raises(qd.QuadrantsTypeError, match="no Quadrants type"):
        qd.from_dlpack(torch.zeros(4, dtype=torch.complex64))


@test_utils.test(arch=[qd.vulkan])
def test_to_dlpack_on_vulkan_is_refused_saying_to_copy():
    # Vulkan buffers are device-local; other libraries cannot address them.
    a = qd.ndarray(qd.i32, (3, 2))
    with pytest.raises(RuntimeError, match=r"to_dlpack.*arch=vulkan.*to_numpy\(\) or to_torch\(\)"):
        torch.utils.dlpack.from_dlpack(a.to_dlpack())
    with pytest.raises(RuntimeError, match="arch=vulkan"):
        np.from_dlpack(a)
    a.from_numpy(np.arange(6, dtype=np.int32).reshape(3, 2))
    np.testing.assert_array_equal(a.to_torch().numpy(), np.arange(6).reshape(3, 2))


@test_utils.test(arch=[qd.vulkan])
def test_from_dlpack_on_vulkan_says_to_copy():
    with pytest.raises(qd.QuadrantsRuntimeError, match="copy instead"):
        qd.from_dlpack(torch.zeros(4))


def _stream_round_trips(n, iterations):
    """Per iteration: torch writes `a`, a kernel reads it into `b`, torch
    reads `b`; nothing synchronizes until the end. Returns the results and
    what each should be."""
    dev = _device()

    @qd.kernel
    def add_one(a: qd.types.ndarray(qd.f32, 1), b: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            b[i] = a[i] + 1.0

    outputs = []
    for it in range(iterations):
        a = torch.full((n,), float(it), device=dev)
        a.mul_(2.0)  # more torch work queued ahead of the kernel
        b = torch.empty(n, device=dev)
        add_one(a, b)
        outputs.append(b * 3.0)
    return outputs, [(2.0 * it + 1.0) * 3.0 for it in range(iterations)]


def _check_round_trips(outputs, expected):
    torch.cuda.synchronize()
    for got, want in zip(outputs, expected):
        assert torch.all(got == want).item(), (got[:4], want)


@test_utils.test(arch=qd.cuda)
def test_kernels_are_ordered_with_torch_work_on_the_default_stream():
    _check_round_trips(*_stream_round_trips(1 << 20, 100))


@test_utils.test(arch=qd.cuda)
def test_kernels_are_ordered_with_torch_work_on_a_side_stream():
    dev = _device()
    side = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(side):
        outputs, expected = _stream_round_trips(1 << 20, 100)
    _check_round_trips(outputs, expected)


@test_utils.test(arch=[qd.cpu, qd.cuda])
def test_ndarray_to_torch_copy_false_shares_the_memory():
    a = qd.ndarray(qd.f32, shape=(4, 3))
    a.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3))
    view = a.to_torch(copy=False)
    assert view.device == torch.device(_device()) and tuple(view.shape) == (4, 3)
    a[2, 1] = -1.0
    assert view[2, 1].item() == -1.0
    view[0, 0] = 42.0  # the other way round too
    assert a[0, 0] == 42.0
    assert a.to_torch(copy=None).data_ptr() == view.data_ptr()
    copied = a.to_torch()  # copy=True: independent
    copied[1, 1] = 9.0
    assert a[1, 1] == 4.0
    with pytest.raises(ValueError, match="incompatible with device transfer"):
        a.to_torch(device="meta", copy=False)


@test_utils.test(arch=qd.cpu)
def test_ndarray_to_numpy_copy_false_is_a_writable_view():
    a = qd.ndarray(qd.i32, shape=5)
    view = a.to_numpy(copy=False)
    assert view.flags.writeable
    view[3] = 7
    assert a[3] == 7
    with pytest.raises(ValueError, match="Zero-copy not available.*dtype=float64"):
        a.to_numpy(np.float64, copy=False)
    assert a.to_numpy(np.float64, copy=None).dtype == np.float64


@test_utils.test(arch=[qd.vulkan, qd.cuda])
def test_views_refused_where_they_cannot_exist_say_so():
    a = qd.ndarray(qd.f32, shape=5)
    with pytest.raises(ValueError, match="Zero-copy not available"):
        a.to_numpy(copy=False)
    np.testing.assert_array_equal(a.to_numpy(copy=None), np.zeros(5))
    if runtime.state.arch == qd.vulkan:
        with pytest.raises(ValueError, match="Zero-copy not available.*arch=vulkan"):
            a.to_torch(copy=False)


@test_utils.test(arch=[qd.vulkan, qd.cuda])
def test_field_copy_false_says_why_there_is_no_view():
    f = qd.field(qd.f32, shape=4)
    calls = [lambda: f.to_numpy(copy=False)]
    if runtime.state.arch == qd.vulkan:
        calls.append(lambda: f.to_torch(copy=False))
    for call in calls:
        with pytest.raises(ValueError, match="Zero-copy not available for field.*only"):
            call()
    assert tuple(f.to_torch(copy=None).shape) == (4,)


@test_utils.test(arch=qd.cuda)
def test_cuda_field_tensors_share_memory_and_stay_valid_as_fields_are_added():
    x = qd.field(qd.f32, shape=(4, 3))
    v = qd.Vector.field(3, qd.i32, shape=5)

    @qd.kernel
    def bump():
        for i, j in x:
            x[i, j] += 1.0
        for i in v:
            v[i][2] += 7

    tx, tv = x.to_torch(copy=False), v.to_torch(copy=False)
    assert tx.device.type == "cuda" and tuple(tv.shape) == (5, 3)
    bump()
    qd.sync()
    assert torch.equal(tx.cpu(), torch.ones(4, 3))
    tx[1, 2] = 5.0  # torch writes what kernels read
    torch.cuda.synchronize()
    assert x[1, 2] == 5.0
    # Fields added later grow the memory in place: old views stay valid.
    later = [qd.field(qd.f64, shape=1 << 16) for _ in range(3)]
    later[2].fill(2.0)
    bump()
    qd.sync()
    assert tx[1, 2].item() == 6.0 and tv[:, 2].cpu().tolist() == [14] * 5
    assert later[2].to_numpy().sum() == 2.0 * (1 << 16)
    with pytest.raises(ValueError, match="incompatible with device transfer"):
        x.to_torch(device="cpu", copy=False)


@test_utils.test(arch=qd.cpu)
def test_field_views_share_memory_and_stay_valid_as_fields_are_added():
    x = qd.field(qd.f32, shape=(4, 3), needs_grad=True)
    v = qd.Vector.field(3, qd.i32, shape=5)

    @qd.kernel
    def bump():
        for i, j in x:
            x[i, j] += 1.0
        for i in v:
            v[i][2] += 7

    view = x.to_numpy(copy=False)
    tensor = x.to_torch(copy=False)
    vectors = v.to_torch(copy=False)
    assert tuple(vectors.shape) == (5, 3)
    assert tuple(v.to_numpy(copy=False, keep_dims=True).shape) == (5, 3, 1)
    view[1, 2] = 5.0  # host writes are what kernels see
    bump()
    assert x[1, 2] == 6.0 and tensor[1, 2].item() == 6.0 and vectors[4, 2].item() == 7
    # Fields added after the views do not move the memory they show.
    later = qd.field(qd.f64, shape=1 << 16)
    later.fill(1.0)
    bump()
    assert view[1, 2] == 7.0 and view[0, 0] == 2.0
    grad_view = x.grad.to_numpy(copy=False)
    grad_view[0, 0] = 3.0
    assert x.grad[0, 0] == 3.0
    assert x.to_numpy(copy=None).base is not None  # copy=None gives the view


@test_utils.test(arch=qd.cpu)
def test_field_views_outlive_the_session_memory_they_show():
    x = qd.field(qd.i32, shape=8)
    x.fill(4)
    view = x.to_numpy(copy=False)
    qd.reset()
    qd.init(arch=qd.cpu)
    assert view.sum() == 32  # the memory stays with the view


@test_utils.test(arch=qd.cpu)
def test_fields_sharing_cells_or_split_components_have_no_view():
    soa = qd.Vector.field(3, qd.f32, shape=4, layout=qd.Layout.SOA)
    s = qd.Struct.field({"a": qd.f32, "b": qd.f32}, shape=4)
    order = qd.field(qd.f32, shape=(3, 4), order="ji")
    order.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(order.to_numpy(copy=False),
                                  np.arange(12).reshape(3, 4))  # strided, not dense
    with pytest.raises(ValueError, match="Zero-copy not available.*SoA"):
        soa.to_numpy(copy=False)
    with pytest.raises(ValueError, match="Zero-copy not available.*interleave"):
        s.a.to_torch(copy=False)
    with pytest.raises(ValueError, match="Zero-copy not available.*0-D"):
        qd.field(qd.f32, shape=()).to_numpy(copy=False)
    assert tuple(soa.to_torch(copy=None).shape) == (4, 3)  # copies instead
