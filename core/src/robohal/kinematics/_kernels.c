/*
 * Compiled forms of the kinematics' scalar hot paths: the differential-IK cycle
 * and the single-pose OPW solver.
 *
 * Each function has a Python reference (named below) that computes the same thing
 * step for step, in the same floating-point order, so both give the same answers
 * (tests/core/test_compiled_kernels.py compares them). The Python modules use these
 * when they were built and fall back to their reference otherwise. Inputs are
 * trusted in value (the callers validate them) but not in shape.
 *
 *   box(h3, h2, h1, period, joints, goal, follow) -> (lower list, upper list)
 *       diffik._box: the cycle's joint box, narrowed toward a moving goal.
 *   chain(constants, q, jacobian) -> ((x, y, z, p), Jacobian rows or None)
 *       chain.DHChain._fk: a DH chain's flange frame and geometric Jacobian;
 *       constants packed by DHChain._packed.
 *   steps(jac, weights, damping2, null_damping2, error, motion, offset) -> (delta, follow, null)
 *       diffik.DifferentialIk._damped_steps: the damped least-squares steps for one Jacobian
 *       (solving the 6 x 6 systems where numpy inverts them: equal to round-off).
 *   opw_forward(constants, q) -> 12 floats
 *       opw.OPW._fk_scalar_python: the flange pose of one configuration (R row-major, then p).
 *   opw(constants, pose rows, reference, j6) -> (rows, failure, near_degenerate)
 *       opw.OPW._solve_python: the verified branches of one pose; constants packed by OPW._packed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

/* Constants shared with diffik.py (NEWTON_TOLERANCE there). */
#define NEWTON_TOLERANCE 1e-4
#define NEWTON_STEPS 8
#define JOINT_CONSTANTS 10

/* The travel bound at acceleration s and its slope in s (diffik._travel_and_slope). */
static void travel_and_slope(double base, double v, double s, double t, double jerk, double braking,
                             double *travel, double *slope)
{
    double release = s > 0.0 ? s : 0.0;
    double peak = v + t * s + release * release / (2.0 * jerk);
    if (peak <= 0.0) {
        *travel = base + t * t * s;
        *slope = t * t;
        return;
    }
    double lever = release / jerk + braking / jerk + t;
    double peak_slope = t + release / jerk;
    *travel = base + t * t * s + peak * lever + peak * peak / (2.0 * braking);
    *slope = t * t + peak_slope * lever + (s > 0.0 ? peak / jerk : 0.0) + peak * peak_slope / braking;
}

/* Largest acceleration in [a_from, a_to] that still brakes before bound (diffik._limit_side). */
static double limit_side(double base, double v, double a_from, double a_to, double bound, double t,
                         double jerk, double braking)
{
    if (a_to <= a_from)
        return a_to;
    double t2 = t * t;
    double release = a_to > 0.0 ? a_to : 0.0;
    double peak = v + t * a_to + release * release / (2.0 * jerk);
    double f1 = base + t2 * a_to;
    if (peak > 0.0)
        f1 = f1 + peak * (release / jerk + braking / jerk + t) + peak * peak / (2.0 * braking);
    if (f1 <= bound)
        return a_to;
    double kink = v > 0.0 ? -v / t : jerk * (-t + sqrt(t * t - 2.0 * v / jerk));
    if (a_to <= kink || base + t2 * kink >= bound) {
        double s = (bound - base) / t2;
        s = s > a_from ? s : a_from;
        return s < a_to ? s : a_to;
    }
    double low = kink > a_from ? kink : a_from;
    double high = a_to;
    double lever = braking / jerk + t;
    double disc = (t + lever) * (t + lever) - 2.0 * (base - t * v - bound) / braking;
    if (disc >= 0.0) {
        double s = (braking * (sqrt(disc) - t - lever) - v) / t;
        if (low < s && s < high)
            high = s;
    }
    double f_high, slope, f_low, slope_low, back;
    travel_and_slope(base, v, high, t, jerk, braking, &f_high, &slope);
    if (f_high <= bound)
        return high;
    travel_and_slope(base, v, low, t, jerk, braking, &f_low, &slope_low);
    if (f_low >= bound)
        return a_from;
    int converged = 0;
    for (int i = 0; i < NEWTON_STEPS; i++) {
        back = (f_high - bound) / slope_low;
        if (back <= NEWTON_TOLERANCE * (1.0 + fabs(high))) {
            converged = 1;
            break;
        }
        high -= (f_high - bound) / slope;
        travel_and_slope(base, v, high, t, jerk, braking, &f_high, &slope);
        if (f_high <= bound)
            return high;
    }
    if (!converged)
        back = (f_high - bound) / slope_low;
    double s = high - back;
    return s > low ? s : low;
}

/* The lower and upper next goal of one joint (one pass of diffik._box's loop). */
static void joint_box(double x3, double x2, double x1, double t, const double *c, int has_goal, double g,
                      double f, double *out_lo, double *out_hi)
{
    double low = c[0], high = c[1], vel = c[2], acc = c[3], jrk = c[4], jt = c[5];
    double braking = c[6], end_braking = c[7], velocity_room = c[8], position_room = c[9];
    double t2 = t * t;
    double v = (x1 - x2) / t;
    double a = (x1 - 2.0 * x2 + x3) / t2;
    double lo = a - jt > -acc ? a - jt : -acc;
    double hi = a + jt < acc ? a + jt : acc;
    double brake_down = lo, brake_up = hi;
    double cap;
    double room_up = vel - v, room_down = vel + v;
    if (room_up < velocity_room) {
        cap = -jt + sqrt(jt * jt + 2.0 * jrk * (room_up < 0.0 ? 0.0 : room_up));
        hi = cap < hi ? cap : hi;
        cap = room_up / t;
        hi = cap < hi ? cap : hi;
    }
    if (room_down < velocity_room) {
        cap = jt - sqrt(jt * jt + 2.0 * jrk * (room_down < 0.0 ? 0.0 : room_down));
        lo = cap > lo ? cap : lo;
        cap = (-vel - v) / t;
        lo = cap > lo ? cap : lo;
    }
    double base = x1 + t * v;
    if (!(high - base > position_room && base - low > position_room && -vel <= v && v <= vel)) {
        high = x1 > high ? x1 : high;
        low = x1 < low ? x1 : low;
        cap = (high - base) / t2;
        hi = cap < hi ? cap : hi;
        cap = (low - base) / t2;
        lo = cap > lo ? cap : lo;
        double release = hi > 0.0 ? hi : 0.0;
        double peak = v + t * hi + release * release / (2.0 * jrk);
        double reach = base + t2 * hi;
        if (peak > 0.0)
            reach = reach + peak * (release / jrk + end_braking / jrk + t) + peak * peak / (2.0 * end_braking);
        if (reach > high)
            hi = limit_side(base, v, brake_down, hi, high, t, jrk, end_braking);
        double nbase = -base, nv = -v, nlo = -lo;
        release = nlo > 0.0 ? nlo : 0.0;
        peak = nv + t * nlo + release * release / (2.0 * jrk);
        reach = nbase + t2 * nlo;
        if (peak > 0.0)
            reach = reach + peak * (release / jrk + end_braking / jrk + t) + peak * peak / (2.0 * end_braking);
        if (reach > -low)
            lo = -limit_side(nbase, nv, -brake_up, nlo, -low, t, jrk, end_braking);
        if (lo > hi) {
            /* min(max(0.5 (lo + hi), brake_down), brake_up) as Python's min and max pick */
            double middle = 0.5 * (lo + hi);
            middle = brake_down > middle ? brake_down : middle;
            lo = hi = brake_up < middle ? brake_up : middle;
        }
    }
    if (has_goal) {
        double rel_v = v - f / t;
        double s = (g - base) / t2;
        double w = rel_v + t * s;
        double gained = s * s / (2.0 * jrk);
        if (w + (s > 0.0 ? gained : 0.0) > 0.0 && g >= base + t2 * lo)
            hi = limit_side(base, rel_v, lo, hi, g, t, jrk, braking);
        if (w - (s < 0.0 ? gained : 0.0) < 0.0 && g <= base + t2 * hi)
            lo = -limit_side(-base, -rel_v, -hi, -lo, -g, t, jrk, braking);
    }
    *out_lo = base + t2 * lo;
    *out_hi = base + t2 * hi;
}

/* Item i of a list or tuple (from PySequence_Fast) as a double: 0, or -1 with the exception
 * set. Converting an item that is not a float runs Python code, which may shrink a list: the
 * size is checked at every call and the item held while it converts. */
static int item_double(PyObject *sequence, Py_ssize_t i, double *out)
{
    if (i >= PySequence_Fast_GET_SIZE(sequence)) {
        PyErr_SetString(PyExc_ValueError, "a sequence changed size during the call");
        return -1;
    }
    PyObject *item = PySequence_Fast_GET_ITEM(sequence, i);
    if (PyFloat_CheckExact(item)) {
        *out = PyFloat_AS_DOUBLE(item);
        return 0;
    }
    Py_INCREF(item);
    *out = PyFloat_AsDouble(item);
    Py_DECREF(item);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *box(PyObject *self, PyObject *args)
{
    PyObject *h3_arg, *h2_arg, *h1_arg, *joints_arg, *goal_arg = Py_None, *follow_arg = Py_None;
    double t;
    if (!PyArg_ParseTuple(args, "OOOdO|OO:box", &h3_arg, &h2_arg, &h1_arg, &t, &joints_arg, &goal_arg, &follow_arg))
        return NULL;
    int has_goal = goal_arg != Py_None;
    PyObject *h3 = NULL, *h2 = NULL, *h1 = NULL, *joints = NULL, *goal = NULL, *follow = NULL;
    PyObject *lower = NULL, *upper = NULL, *result = NULL;
    if (!(h3 = PySequence_Fast(h3_arg, "h3 must be a sequence")) || !(h2 = PySequence_Fast(h2_arg, "h2 must be a sequence"))
        || !(h1 = PySequence_Fast(h1_arg, "h1 must be a sequence"))
        || !(joints = PySequence_Tuple(joints_arg)))  /* a tuple: item conversions cannot change it */
        goto done;
    /* zip over the history and the joints stops at the shortest; goal and follow match the joints */
    Py_ssize_t n = PySequence_Fast_GET_SIZE(joints);
    if (PySequence_Fast_GET_SIZE(h3) < n) n = PySequence_Fast_GET_SIZE(h3);
    if (PySequence_Fast_GET_SIZE(h2) < n) n = PySequence_Fast_GET_SIZE(h2);
    if (PySequence_Fast_GET_SIZE(h1) < n) n = PySequence_Fast_GET_SIZE(h1);
    if (has_goal) {
        if (!(goal = PySequence_Fast(goal_arg, "goal must be a sequence"))
            || !(follow = PySequence_Fast(follow_arg, "follow must be a sequence")))
            goto done;
        if (PySequence_Fast_GET_SIZE(goal) != PySequence_Fast_GET_SIZE(joints)
            || PySequence_Fast_GET_SIZE(follow) != PySequence_Fast_GET_SIZE(joints)) {
            PyErr_SetString(PyExc_ValueError, "goal and follow need one value per joint");
            goto done;
        }
    }
    if (!(lower = PyList_New(n)) || !(upper = PyList_New(n)))
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        double x3, x2, x1, g = 0.0, f = 0.0, constants[JOINT_CONSTANTS], lo, hi;
        if (item_double(h3, i, &x3) || item_double(h2, i, &x2) || item_double(h1, i, &x1))
            goto done;
        if (has_goal && (item_double(goal, i, &g) || item_double(follow, i, &f)))
            goto done;
        PyObject *joint = PySequence_Fast(PySequence_Fast_GET_ITEM(joints, i), "a joint's constants must be a sequence");
        if (!joint)
            goto done;
        int bad = PySequence_Fast_GET_SIZE(joint) != JOINT_CONSTANTS;
        for (int k = 0; !bad && k < JOINT_CONSTANTS; k++)
            bad = item_double(joint, k, &constants[k]);
        Py_DECREF(joint);
        if (bad) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "each joint needs its 10 box constants");
            goto done;
        }
        joint_box(x3, x2, x1, t, constants, has_goal, g, f, &lo, &hi);
        PyObject *lo_item = PyFloat_FromDouble(lo), *hi_item = PyFloat_FromDouble(hi);
        if (!lo_item || !hi_item) {
            Py_XDECREF(lo_item);
            Py_XDECREF(hi_item);
            goto done;
        }
        PyList_SET_ITEM(lower, i, lo_item);
        PyList_SET_ITEM(upper, i, hi_item);
    }
    result = PyTuple_Pack(2, lower, upper);
done:
    Py_XDECREF(h3);
    Py_XDECREF(h2);
    Py_XDECREF(h1);
    Py_XDECREF(joints);
    Py_XDECREF(goal);
    Py_XDECREF(follow);
    Py_XDECREF(lower);
    Py_XDECREF(upper);
    return result;
}


/* Layout of DHChain._packed: modified, flange turns, base rows 0-2 (12), flange rows 0-2 (12),
 * then per joint offset, kind, a, d, cos(alpha), sin(alpha). */
#define CHAIN_HEADER 26
#define CHAIN_PER_JOINT 6

static PyObject *triple(double a, double b, double c)
{
    return Py_BuildValue("(ddd)", a, b, c);
}

static PyObject *chain(PyObject *self, PyObject *args)
{
    Py_buffer packed;
    PyObject *q_arg;
    int want_jacobian;
    if (!PyArg_ParseTuple(args, "y*Op:chain", &packed, &q_arg, &want_jacobian))
        return NULL;
    PyObject *q = NULL, *jac = NULL, *result = NULL, *columns[4] = {NULL, NULL, NULL, NULL};
    double *axes = NULL;
    const double *c = packed.buf;
    Py_ssize_t count = packed.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t dof = (count - CHAIN_HEADER) / CHAIN_PER_JOINT;
    if (count < CHAIN_HEADER || (count - CHAIN_HEADER) % CHAIN_PER_JOINT) {
        PyErr_SetString(PyExc_ValueError, "chain constants have the wrong length");
        goto done;
    }
    if (!(q = PySequence_Fast(q_arg, "q must be a sequence")))
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(q) < dof ? PySequence_Fast_GET_SIZE(q) : dof;
    if (!(axes = PyMem_Malloc(sizeof(double) * 6 * (dof > 0 ? dof : 1)))) {
        PyErr_NoMemory();
        goto done;
    }
    int modified = c[0] != 0.0, flange_turns = c[1] != 0.0;
    const double *b = c + 2, *fl = c + 14;
    double x0 = b[0], x1 = b[4], x2 = b[8], y0 = b[1], y1 = b[5], y2 = b[9], z0 = b[2], z1 = b[6], z2 = b[10];
    double px = b[3], py = b[7], pz = b[11];
    for (Py_ssize_t i = 0; i < n; i++) {
        const double *joint = c + CHAIN_HEADER + CHAIN_PER_JOINT * i;
        double qi, offset = joint[0], kind = joint[1], a = joint[2], d = joint[3], ca = joint[4], sa = joint[5];
        if (item_double(q, i, &qi))
            goto done;
        double theta = qi + offset, ct = cos(theta), st = sin(theta);
        double *axis = axes + 6 * i;
        if (modified) {
            double u0, u1, u2;
            if (kind == 0.0) {
                u0 = y0, u1 = y1, u2 = y2;
            } else if (kind == 1.0) {
                u0 = z0, u1 = z1, u2 = z2;
                z0 = -y0, z1 = -y1, z2 = -y2;
            } else if (kind == -1.0) {
                u0 = -z0, u1 = -z1, u2 = -z2;
                z0 = y0, z1 = y1, z2 = y2;
            } else {
                u0 = ca * y0 + sa * z0, u1 = ca * y1 + sa * z1, u2 = ca * y2 + sa * z2;
                double w0 = ca * z0 - sa * y0, w1 = ca * z1 - sa * y1, w2 = ca * z2 - sa * y2;
                z0 = w0, z1 = w1, z2 = w2;
            }
            if (a != 0.0) {
                px += a * x0;
                py += a * x1;
                pz += a * x2;
            }
            if (d != 0.0) {
                px += d * z0;
                py += d * z1;
                pz += d * z2;
            }
            double n0 = ct * x0 + st * u0, n1 = ct * x1 + st * u1, n2 = ct * x2 + st * u2;
            y0 = ct * u0 - st * x0, y1 = ct * u1 - st * x1, y2 = ct * u2 - st * x2;
            x0 = n0, x1 = n1, x2 = n2;
            axis[0] = z0, axis[1] = z1, axis[2] = z2, axis[3] = px, axis[4] = py, axis[5] = pz;
        } else {
            axis[0] = z0, axis[1] = z1, axis[2] = z2, axis[3] = px, axis[4] = py, axis[5] = pz;
            double n0 = ct * x0 + st * y0, n1 = ct * x1 + st * y1, n2 = ct * x2 + st * y2;
            double m0 = ct * y0 - st * x0, m1 = ct * y1 - st * x1, m2 = ct * y2 - st * x2;
            px += a * n0 + d * z0;
            py += a * n1 + d * z1;
            pz += a * n2 + d * z2;
            x0 = n0, x1 = n1, x2 = n2;
            y0 = ca * m0 + sa * z0, y1 = ca * m1 + sa * z1, y2 = ca * m2 + sa * z2;
            double w0 = ca * z0 - sa * m0, w1 = ca * z1 - sa * m1, w2 = ca * z2 - sa * m2;
            z0 = w0, z1 = w1, z2 = w2;
        }
    }
    double fx = fl[3], fy = fl[7], fz = fl[11];
    px += fx * x0 + fy * y0 + fz * z0;
    py += fx * x1 + fy * y1 + fz * z1;
    pz += fx * x2 + fy * y2 + fz * z2;
    if (flange_turns) {
        for (int j = 0; j < 3; j++)
            columns[j] = triple(fl[j] * x0 + fl[4 + j] * y0 + fl[8 + j] * z0,
                                fl[j] * x1 + fl[4 + j] * y1 + fl[8 + j] * z1,
                                fl[j] * x2 + fl[4 + j] * y2 + fl[8 + j] * z2);
    } else {
        columns[0] = triple(x0, x1, x2);
        columns[1] = triple(y0, y1, y2);
        columns[2] = triple(z0, z1, z2);
    }
    columns[3] = triple(px, py, pz);
    if (!columns[0] || !columns[1] || !columns[2] || !columns[3])
        goto done;
    if (want_jacobian) {
        if (!(jac = PyList_New(6)))
            goto done;
        for (int row = 0; row < 6; row++) {
            PyObject *values = PyList_New(dof);
            if (!values)
                goto done;
            PyList_SET_ITEM(jac, row, values);
            for (Py_ssize_t i = 0; i < dof; i++) {
                double value = 0.0;
                if (i < n) {
                    const double *axis = axes + 6 * i;
                    double wx = axis[0], wy = axis[1], wz = axis[2];
                    double rx = px - axis[3], ry = py - axis[4], rz = pz - axis[5];
                    switch (row) {
                    case 0: value = wy * rz - wz * ry; break;
                    case 1: value = wz * rx - wx * rz; break;
                    case 2: value = wx * ry - wy * rx; break;
                    default: value = axis[row - 3];
                    }
                }
                PyObject *item = PyFloat_FromDouble(value);
                if (!item)
                    goto done;
                PyList_SET_ITEM(values, i, item);
            }
        }
    } else {
        jac = Py_NewRef(Py_None);
    }
    result = Py_BuildValue("((OOOO)O)", columns[0], columns[1], columns[2], columns[3], jac);
done:
    PyBuffer_Release(&packed);
    Py_XDECREF(q);
    Py_XDECREF(jac);
    for (int j = 0; j < 4; j++)
        Py_XDECREF(columns[j]);
    PyMem_Free(axes);
    return result;
}

#define TASK 6

/* Solve the 6 x 6 system a x = b for k right-hand sides (columns of b, overwritten by x), by
 * Gaussian elimination with partial pivoting, as LAPACK's dgesv does. a is overwritten. */
static void solve6(double a[TASK][TASK], double (*b)[TASK], int k)
{
    for (int col = 0; col < TASK; col++) {
        int pivot = col;
        for (int row = col + 1; row < TASK; row++)
            if (fabs(a[row][col]) > fabs(a[pivot][col]))
                pivot = row;
        if (pivot != col) {
            for (int j = 0; j < TASK; j++) {
                double swap = a[col][j];
                a[col][j] = a[pivot][j];
                a[pivot][j] = swap;
            }
            for (int r = 0; r < k; r++) {
                double swap = b[r][col];
                b[r][col] = b[r][pivot];
                b[r][pivot] = swap;
            }
        }
        for (int row = col + 1; row < TASK; row++) {
            double factor = a[row][col] / a[col][col];
            if (factor == 0.0)
                continue;
            for (int j = col + 1; j < TASK; j++)
                a[row][j] -= factor * a[col][j];
            for (int r = 0; r < k; r++)
                b[r][row] -= factor * b[r][col];
        }
    }
    for (int r = 0; r < k; r++)
        for (int row = TASK - 1; row >= 0; row--) {
            double value = b[r][row];
            for (int j = row + 1; j < TASK; j++)
                value -= a[row][j] * b[r][j];
            b[r][row] = value / a[row][row];
        }
}

static int read_doubles(PyObject *object, double *out, Py_ssize_t count, const char *what)
{
    PyObject *sequence = PySequence_Fast(object, what);
    if (!sequence)
        return -1;
    int bad = PySequence_Fast_GET_SIZE(sequence) != count;
    for (Py_ssize_t i = 0; !bad && i < count; i++)
        bad = item_double(sequence, i, &out[i]);
    Py_DECREF(sequence);
    if (bad && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "%s: expected %zd values", what, count);
    return bad ? -1 : 0;
}

static PyObject *float_list(const double *values, Py_ssize_t count)
{
    PyObject *list = PyList_New(count);
    for (Py_ssize_t i = 0; list && i < count; i++) {
        PyObject *item = PyFloat_FromDouble(values[i]);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *steps(PyObject *self, PyObject *args)
{
    PyObject *jac_arg, *weights_arg, *error_arg, *motion_arg, *offset_arg, *result = NULL;
    PyObject *out[3] = {NULL, NULL, NULL};
    double damping2, null_damping2;
    if (!PyArg_ParseTuple(args, "OOddOOO:steps", &jac_arg, &weights_arg, &damping2, &null_damping2, &error_arg,
                          &motion_arg, &offset_arg))
        return NULL;
    PyObject *rows = PySequence_Tuple(jac_arg);  /* a tuple: item conversions cannot change it */
    if (!rows)
        return NULL;
    double *jw = NULL, weights[TASK], rhs[2][TASK], a[TASK][TASK], system[TASK][TASK];
    double *results = NULL;
    Py_ssize_t dof = 0;
    if (PySequence_Fast_GET_SIZE(rows) != TASK) {
        PyErr_SetString(PyExc_ValueError, "the Jacobian must have 6 rows");
        goto done;
    }
    PyObject *first = PySequence_Fast(PySequence_Fast_GET_ITEM(rows, 0), "a Jacobian row must be a sequence");
    if (!first)
        goto done;
    dof = PySequence_Fast_GET_SIZE(first);
    Py_DECREF(first);
    if (!(jw = PyMem_Malloc(sizeof(double) * TASK * (dof + 1))) || !(results = PyMem_Malloc(sizeof(double) * 3 * (dof + 1)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (read_doubles(weights_arg, weights, TASK, "weights"))
        goto done;
    for (int r = 0; r < TASK; r++) {
        if (read_doubles(PySequence_Fast_GET_ITEM(rows, r), jw + r * dof, dof, "a Jacobian row"))
            goto done;
        for (Py_ssize_t i = 0; i < dof; i++)
            jw[r * dof + i] *= weights[r];
    }
    /* JW JW^T, once for both dampings */
    for (int r = 0; r < TASK; r++)
        for (int c = 0; c <= r; c++) {
            double sum = 0.0;
            for (Py_ssize_t i = 0; i < dof; i++)
                sum += jw[r * dof + i] * jw[c * dof + i];
            a[r][c] = a[c][r] = sum;
        }
    int k = 0;
    if (read_doubles(error_arg, rhs[k++], TASK, "error"))
        goto done;
    int has_motion = motion_arg != Py_None, has_offset = offset_arg != Py_None;
    if (has_motion && read_doubles(motion_arg, rhs[k++], TASK, "motion"))
        goto done;
    memcpy(system, a, sizeof(system));
    for (int r = 0; r < TASK; r++)
        system[r][r] += damping2;
    solve6(system, rhs, k);
    /* joint steps: JW^T (JW JW^T + damping^2 I)^-1 (error, motion) */
    for (int v = 0; v < k; v++)
        for (Py_ssize_t i = 0; i < dof; i++) {
            double sum = 0.0;
            for (int r = 0; r < TASK; r++)
                sum += jw[r * dof + i] * rhs[v][r];
            results[v * dof + i] = sum;
        }
    if (has_offset) {
        /* the offset less its part the task sees: offset - JW^T (JW JW^T + null_damping^2 I)^-1 JW offset */
        double *offset = results + 2 * dof, task[1][TASK];
        if (read_doubles(offset_arg, offset, dof, "offset"))
            goto done;
        for (int r = 0; r < TASK; r++) {
            double sum = 0.0;
            for (Py_ssize_t i = 0; i < dof; i++)
                sum += jw[r * dof + i] * offset[i];
            task[0][r] = sum;
            a[r][r] += null_damping2;
        }
        solve6(a, task, 1);
        for (Py_ssize_t i = 0; i < dof; i++) {
            double sum = 0.0;
            for (int r = 0; r < TASK; r++)
                sum += jw[r * dof + i] * task[0][r];
            offset[i] -= sum;
        }
    }
    if (!(out[0] = float_list(results, dof)))
        goto done;
    out[1] = has_motion ? float_list(results + dof, dof) : Py_NewRef(Py_None);
    out[2] = has_offset ? float_list(results + 2 * dof, dof) : Py_NewRef(Py_None);
    if (out[1] && out[2])
        result = PyTuple_Pack(3, out[0], out[1], out[2]);
done:
    Py_DECREF(rows);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(out[i]);
    PyMem_Free(jw);
    PyMem_Free(results);
    return result;
}

/* Layout of OPW._packed: a1, a2, b, c1, c2, c3, c4, k, psi, signs (6), offsets (6), then the
 * thresholds NEAR_DEGENERATE, RIM_SLACK, VERIFY_POSITION, VERIFY_ROTATION, WRIST_DEGENERATE. */
#define OPW_CONSTANTS 26

/* Python's float x % m for m > 0 (the sign of the divisor, as float_rem computes it) */
static double python_mod(double x, double m)
{
    double mod = fmod(x, m);
    if (mod != 0.0) {
        if ((m < 0) != (mod < 0))
            mod += m;
    } else {
        mod = copysign(0.0, m);
    }
    return mod;
}

/* An angle into (-pi, pi] as opw.py writes it: pi - (pi - x) % 2 pi */
static double wrapped(double x)
{
    return Py_MATH_PI - python_mod(Py_MATH_PI - x, 2.0 * Py_MATH_PI);
}

static PyObject *opw(PyObject *self, PyObject *args)
{
    Py_buffer packed;
    PyObject *rows_arg, *reference_arg, *j6_arg;
    if (!PyArg_ParseTuple(args, "y*OOO:opw", &packed, &rows_arg, &reference_arg, &j6_arg))
        return NULL;
    PyObject *rows = NULL, *result = NULL;
    double m[12], reference[6];
    const double *c = packed.buf;
    if (packed.len != OPW_CONSTANTS * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "OPW constants have the wrong length");
        goto done;
    }
    PyObject *pose = PySequence_Tuple(rows_arg);  /* a tuple: item conversions cannot change it */
    if (!pose)
        goto done;
    int bad = PySequence_Fast_GET_SIZE(pose) < 3;
    for (int r = 0; !bad && r < 3; r++)
        bad = read_doubles(PySequence_Fast_GET_ITEM(pose, r), m + 4 * r, 4, "a pose row");
    Py_DECREF(pose);
    if (bad) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "the pose needs 3 rows of 4");
        goto done;
    }
    if (read_doubles(reference_arg, reference, 6, "reference"))
        goto done;
    int has_j6 = j6_arg != Py_None;
    double j6 = has_j6 ? PyFloat_AsDouble(j6_arg) : 0.0;
    if (has_j6 && j6 == -1.0 && PyErr_Occurred())
        goto done;
    double r00 = m[0], r01 = m[1], r02 = m[2], px = m[3], r10 = m[4], r11 = m[5], r12 = m[6], py = m[7];
    double r20 = m[8], r21 = m[9], r22 = m[10], pz = m[11];
    double a1 = c[0], a2 = c[1], b = c[2], c1 = c[3], c2 = c[4], c3 = c[5], c4 = c[6], k = c[7], psi = c[8];
    const double *sg = c + 9, *of = c + 15;
    double near_limit = c[21], rim_slack = c[22], verify_position = c[23], verify_rotation = c[24];
    double wrist_degenerate = c[25];
    double cx = px - c4 * r02, cy = py - c4 * r12, cz = pz - c4 * r22;
    double rho2 = cx * cx + cy * cy - b * b;
    if (rho2 < -1e-12) {
        result = Py_BuildValue("([](sdd)O)", "offset", cx, cy, Py_False);
        goto done;
    }
    double r = sqrt(rho2 > 0.0 ? rho2 : 0.0);
    int near_degenerate = r < near_limit;
    double phi = cx * cx + cy * cy > 1e-24 ? atan2(cy, cx) : sg[0] * reference[0] - of[0];
    double v = cz - c1, kk = c2 * c2 + k * k, two_c2k = 2.0 * c2 * k;
    int out_of_reach = 0;
    double reach_u = 0.0, reach_v = 0.0;
    if (!(rows = PyList_New(0)))
        goto done;
    for (int side = 0; side < 2; side++) {
        double xp = side == 0 ? r : -r;
        double u = xp - a1;
        double d = (u * u + v * v - kk) / two_c2k;
        if (fabs(d) > 1.0 + rim_slack) {
            if (!out_of_reach) {
                out_of_reach = 1;
                reach_u = u, reach_v = v;
            }
            continue;
        }
        d = d > -1.0 ? d : -1.0;
        d = d < 1.0 ? d : 1.0;
        double t1 = phi - atan2(b, xp);
        double sn1 = sin(t1), cs1 = cos(t1);
        double h_x = cs1 * r00 + sn1 * r10, h_y = cs1 * r01 + sn1 * r11, h_z = cs1 * r02 + sn1 * r12;
        double m12 = cs1 * r12 - sn1 * r02;
        double along = atan2(u, v);
        double root = sqrt(1.0 - d * d);
        if (root < near_limit)
            near_degenerate = 1;
        double q1 = wrapped(sg[0] * (t1 + of[0]));
        int elbows = root > 0 ? 2 : 1;
        for (int e = 0; e < elbows; e++) {
            double sin_elbow = elbows == 1 ? 0.0 : (e == 0 ? root : -root);
            double t3 = atan2(sin_elbow, d) - psi;
            double t2 = along - atan2(k * sin_elbow, c2 + k * d);
            double t23 = t2 + t3, s23 = sin(t23), c23 = cos(t23);
            double xw = a1 + c2 * sin(t2) + a2 * c23 + c3 * s23;
            double zw = c1 + c2 * cos(t2) - a2 * s23 + c3 * c23;
            if (fabs(cs1 * xw - sn1 * b - cx) > verify_position || fabs(sn1 * xw + cs1 * b - cy) > verify_position
                || fabs(zw - cz) > verify_position)
                continue;
            double m02 = c23 * h_z - s23 * r22, m22 = s23 * h_z + c23 * r22;
            double sin5 = sqrt(m02 * m02 + m12 * m12);
            double t5 = atan2(sin5, m22), t4, t6;
            if (sin5 < near_limit)
                near_degenerate = 1;
            int flip = sin5 >= wrist_degenerate;
            if (flip) {
                t4 = atan2(m12, m02);
                t6 = has_j6 ? j6 : atan2(s23 * h_y + c23 * r21, -(s23 * h_x + c23 * r20));
            } else {
                t4 = sg[3] * reference[3] - of[3];
                if (has_j6) {
                    t6 = j6;
                } else {
                    double m00 = c23 * h_x - s23 * r20, m10 = cs1 * r10 - sn1 * r00;
                    t6 = m22 > 0 ? atan2(m10, m00) - t4 : t4 - atan2(-m10, -m00);
                }
            }
            double sn4 = sin(t4), cs4 = cos(t4), sn5 = sin(t5), cs5 = cos(t5);
            double e02 = cs4 * sn5, e12 = sn4 * sn5;
            double u2 = c23 * e02 + s23 * cs5;
            if (fabs(cs1 * u2 - sn1 * e12 - r02) > verify_rotation || fabs(sn1 * u2 + cs1 * e12 - r12) > verify_rotation
                || fabs(c23 * cs5 - s23 * e02 - r22) > verify_rotation)
                continue;
            if (!has_j6) {
                double sn6 = sin(t6), cs6 = cos(t6);
                double e00 = cs4 * cs5 * cs6 - sn4 * sn6, e10 = sn4 * cs5 * cs6 + cs4 * sn6, e20 = -sn5 * cs6;
                double u0 = c23 * e00 + s23 * e20;
                if (fabs(cs1 * u0 - sn1 * e10 - r00) > verify_rotation || fabs(sn1 * u0 + cs1 * e10 - r10) > verify_rotation
                    || fabs(c23 * e20 - s23 * e00 - r20) > verify_rotation)
                    continue;
            }
            double q2 = wrapped(sg[1] * (t2 + of[1])), q3 = wrapped(sg[2] * (t3 + of[2]));
            double row[6] = {q1, q2, q3, wrapped(sg[3] * (t4 + of[3])), wrapped(sg[4] * (t5 + of[4])),
                             wrapped(sg[5] * (t6 + of[5]))};
            PyObject *item = float_list(row, 6);
            if (!item || PyList_Append(rows, item)) {
                Py_XDECREF(item);
                goto done;
            }
            Py_DECREF(item);
            if (flip) {
                double t6f = has_j6 ? t6 : t6 + Py_MATH_PI;
                double flipped[6] = {q1, q2, q3, wrapped(sg[3] * (t4 + Py_MATH_PI + of[3])), wrapped(sg[4] * (of[4] - t5)),
                                     wrapped(sg[5] * (t6f + of[5]))};
                item = float_list(flipped, 6);
                if (!item || PyList_Append(rows, item)) {
                    Py_XDECREF(item);
                    goto done;
                }
                Py_DECREF(item);
            }
        }
    }
    if (PyList_GET_SIZE(rows) > 0)
        result = Py_BuildValue("(OOO)", rows, Py_None, near_degenerate ? Py_True : Py_False);
    else if (out_of_reach)
        result = Py_BuildValue("([](sdd)O)", "reach", reach_u, reach_v, Py_False);
    else
        result = Py_BuildValue("([](s)O)", "degenerate", Py_False);
done:
    PyBuffer_Release(&packed);
    Py_XDECREF(rows);
    return result;
}

static PyObject *opw_forward(PyObject *self, PyObject *args)
{
    Py_buffer packed;
    PyObject *q_arg, *result = NULL;
    double q[6];
    if (!PyArg_ParseTuple(args, "y*O:opw_forward", &packed, &q_arg))
        return NULL;
    const double *c = packed.buf;
    if (packed.len != OPW_CONSTANTS * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "OPW constants have the wrong length");
        goto done;
    }
    if (read_doubles(q_arg, q, 6, "joints"))
        goto done;
    double a1 = c[0], a2 = c[1], b = c[2], c1 = c[3], c2 = c[4], c3 = c[5], c4 = c[6];
    const double *sg = c + 9, *of = c + 15;
    double t1 = sg[0] * q[0] - of[0], t2 = sg[1] * q[1] - of[1];
    double t23 = t2 + sg[2] * q[2] - of[2];
    double t4 = sg[3] * q[3] - of[3], t5 = sg[4] * q[4] - of[4], t6 = sg[5] * q[5] - of[5];
    double sn1 = sin(t1), cs1 = cos(t1), sn2 = sin(t2), cs2 = cos(t2), s23 = sin(t23), c23 = cos(t23);
    double sn4 = sin(t4), cs4 = cos(t4), sn5 = sin(t5), cs5 = cos(t5), sn6 = sin(t6), cs6 = cos(t6);
    /* R3_6 = Rz(t4) Ry(t5) Rz(t6); R0_3 = Rz(t1) Ry(t23) (as opw.OPW._pose_entries) */
    double c4c5 = cs4 * cs5, s4c5 = sn4 * cs5;
    double e00 = c4c5 * cs6 - sn4 * sn6, e01 = -c4c5 * sn6 - sn4 * cs6, e02 = cs4 * sn5;
    double e10 = s4c5 * cs6 + cs4 * sn6, e11 = -s4c5 * sn6 + cs4 * cs6, e12 = sn4 * sn5;
    double e20 = -sn5 * cs6, e21 = sn5 * sn6, e22 = cs5;
    double u0 = c23 * e00 + s23 * e20, u1 = c23 * e01 + s23 * e21, u2 = c23 * e02 + s23 * e22;
    double r02 = cs1 * u2 - sn1 * e12, r12 = sn1 * u2 + cs1 * e12, r22 = c23 * e22 - s23 * e02;
    double xw = a1 + c2 * sn2 + a2 * c23 + c3 * s23;
    double zw = c1 + c2 * cs2 - a2 * s23 + c3 * c23;
    double m[12] = {
        cs1 * u0 - sn1 * e10, cs1 * u1 - sn1 * e11, r02,
        sn1 * u0 + cs1 * e10, sn1 * u1 + cs1 * e11, r12,
        c23 * e20 - s23 * e00, c23 * e21 - s23 * e01, r22,
        cs1 * xw - sn1 * b + c4 * r02, sn1 * xw + cs1 * b + c4 * r12, zw + c4 * r22,
    };
    result = float_list(m, 12);
done:
    PyBuffer_Release(&packed);
    return result;
}

static PyMethodDef methods[] = {
    {"box", box, METH_VARARGS,
     "box(h3, h2, h1, period, joints, goal=None, follow=None) -> (lower, upper): diffik._box, compiled."},
    {"chain", chain, METH_VARARGS,
     "chain(constants, q, jacobian) -> ((x, y, z, p), rows or None): DHChain._fk, compiled."},
    {"steps", steps, METH_VARARGS,
     "steps(jac, weights, damping2, null_damping2, error, motion, offset) -> (delta, follow, null)."},
    {"opw_forward", opw_forward, METH_VARARGS, "opw_forward(constants, q) -> 12 floats: OPW._fk_scalar, compiled."},
    {"opw", opw, METH_VARARGS,
     "opw(constants, pose rows, reference, j6) -> (rows, failure, near_degenerate): OPW._solve, compiled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_kernels",
    .m_doc = "Compiled forms of the kinematics' scalar hot paths (see the Python references).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__kernels(void)
{
    return PyModule_Create(&module);
}
