from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EgmHeader(_message.Message):
    __slots__ = ("seqno", "tm", "mtype")
    class MessageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MSGTYPE_UNDEFINED: _ClassVar[EgmHeader.MessageType]
        MSGTYPE_COMMAND: _ClassVar[EgmHeader.MessageType]
        MSGTYPE_DATA: _ClassVar[EgmHeader.MessageType]
        MSGTYPE_CORRECTION: _ClassVar[EgmHeader.MessageType]
        MSGTYPE_PATH_CORRECTION: _ClassVar[EgmHeader.MessageType]
    MSGTYPE_UNDEFINED: EgmHeader.MessageType
    MSGTYPE_COMMAND: EgmHeader.MessageType
    MSGTYPE_DATA: EgmHeader.MessageType
    MSGTYPE_CORRECTION: EgmHeader.MessageType
    MSGTYPE_PATH_CORRECTION: EgmHeader.MessageType
    SEQNO_FIELD_NUMBER: _ClassVar[int]
    TM_FIELD_NUMBER: _ClassVar[int]
    MTYPE_FIELD_NUMBER: _ClassVar[int]
    seqno: int
    tm: int
    mtype: EgmHeader.MessageType
    def __init__(self, seqno: _Optional[int] = ..., tm: _Optional[int] = ..., mtype: _Optional[_Union[EgmHeader.MessageType, str]] = ...) -> None: ...

class EgmCartesian(_message.Message):
    __slots__ = ("x", "y", "z")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    Z_FIELD_NUMBER: _ClassVar[int]
    x: float
    y: float
    z: float
    def __init__(self, x: _Optional[float] = ..., y: _Optional[float] = ..., z: _Optional[float] = ...) -> None: ...

class EgmQuaternion(_message.Message):
    __slots__ = ("u0", "u1", "u2", "u3")
    U0_FIELD_NUMBER: _ClassVar[int]
    U1_FIELD_NUMBER: _ClassVar[int]
    U2_FIELD_NUMBER: _ClassVar[int]
    U3_FIELD_NUMBER: _ClassVar[int]
    u0: float
    u1: float
    u2: float
    u3: float
    def __init__(self, u0: _Optional[float] = ..., u1: _Optional[float] = ..., u2: _Optional[float] = ..., u3: _Optional[float] = ...) -> None: ...

class EgmEuler(_message.Message):
    __slots__ = ("x", "y", "z")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    Z_FIELD_NUMBER: _ClassVar[int]
    x: float
    y: float
    z: float
    def __init__(self, x: _Optional[float] = ..., y: _Optional[float] = ..., z: _Optional[float] = ...) -> None: ...

class EgmClock(_message.Message):
    __slots__ = ("sec", "usec")
    SEC_FIELD_NUMBER: _ClassVar[int]
    USEC_FIELD_NUMBER: _ClassVar[int]
    sec: int
    usec: int
    def __init__(self, sec: _Optional[int] = ..., usec: _Optional[int] = ...) -> None: ...

class EgmTimestamp(_message.Message):
    __slots__ = ("sec", "nsec")
    SEC_FIELD_NUMBER: _ClassVar[int]
    NSEC_FIELD_NUMBER: _ClassVar[int]
    sec: int
    nsec: int
    def __init__(self, sec: _Optional[int] = ..., nsec: _Optional[int] = ...) -> None: ...

class EgmPose(_message.Message):
    __slots__ = ("pos", "orient", "euler")
    POS_FIELD_NUMBER: _ClassVar[int]
    ORIENT_FIELD_NUMBER: _ClassVar[int]
    EULER_FIELD_NUMBER: _ClassVar[int]
    pos: EgmCartesian
    orient: EgmQuaternion
    euler: EgmEuler
    def __init__(self, pos: _Optional[_Union[EgmCartesian, _Mapping]] = ..., orient: _Optional[_Union[EgmQuaternion, _Mapping]] = ..., euler: _Optional[_Union[EgmEuler, _Mapping]] = ...) -> None: ...

class EgmCartesianSpeed(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, value: _Optional[_Iterable[float]] = ...) -> None: ...

class EgmJoints(_message.Message):
    __slots__ = ("joints",)
    JOINTS_FIELD_NUMBER: _ClassVar[int]
    joints: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, joints: _Optional[_Iterable[float]] = ...) -> None: ...

class EgmExternalJoints(_message.Message):
    __slots__ = ("joints",)
    JOINTS_FIELD_NUMBER: _ClassVar[int]
    joints: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, joints: _Optional[_Iterable[float]] = ...) -> None: ...

class EgmPlanned(_message.Message):
    __slots__ = ("joints", "cartesian", "externalJoints", "time", "timeStamp")
    JOINTS_FIELD_NUMBER: _ClassVar[int]
    CARTESIAN_FIELD_NUMBER: _ClassVar[int]
    EXTERNALJOINTS_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    joints: EgmJoints
    cartesian: EgmPose
    externalJoints: EgmJoints
    time: EgmClock
    timeStamp: EgmTimestamp
    def __init__(self, joints: _Optional[_Union[EgmJoints, _Mapping]] = ..., cartesian: _Optional[_Union[EgmPose, _Mapping]] = ..., externalJoints: _Optional[_Union[EgmJoints, _Mapping]] = ..., time: _Optional[_Union[EgmClock, _Mapping]] = ..., timeStamp: _Optional[_Union[EgmTimestamp, _Mapping]] = ...) -> None: ...

class EgmSpeedRef(_message.Message):
    __slots__ = ("joints", "cartesians", "externalJoints")
    JOINTS_FIELD_NUMBER: _ClassVar[int]
    CARTESIANS_FIELD_NUMBER: _ClassVar[int]
    EXTERNALJOINTS_FIELD_NUMBER: _ClassVar[int]
    joints: EgmJoints
    cartesians: EgmCartesianSpeed
    externalJoints: EgmJoints
    def __init__(self, joints: _Optional[_Union[EgmJoints, _Mapping]] = ..., cartesians: _Optional[_Union[EgmCartesianSpeed, _Mapping]] = ..., externalJoints: _Optional[_Union[EgmJoints, _Mapping]] = ...) -> None: ...

class EgmPathCorr(_message.Message):
    __slots__ = ("pos", "age")
    POS_FIELD_NUMBER: _ClassVar[int]
    AGE_FIELD_NUMBER: _ClassVar[int]
    pos: EgmCartesian
    age: int
    def __init__(self, pos: _Optional[_Union[EgmCartesian, _Mapping]] = ..., age: _Optional[int] = ...) -> None: ...

class EgmFeedBack(_message.Message):
    __slots__ = ("joints", "cartesian", "externalJoints", "time", "timeStamp")
    JOINTS_FIELD_NUMBER: _ClassVar[int]
    CARTESIAN_FIELD_NUMBER: _ClassVar[int]
    EXTERNALJOINTS_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    joints: EgmJoints
    cartesian: EgmPose
    externalJoints: EgmJoints
    time: EgmClock
    timeStamp: EgmTimestamp
    def __init__(self, joints: _Optional[_Union[EgmJoints, _Mapping]] = ..., cartesian: _Optional[_Union[EgmPose, _Mapping]] = ..., externalJoints: _Optional[_Union[EgmJoints, _Mapping]] = ..., time: _Optional[_Union[EgmClock, _Mapping]] = ..., timeStamp: _Optional[_Union[EgmTimestamp, _Mapping]] = ...) -> None: ...

class EgmMotorState(_message.Message):
    __slots__ = ("state",)
    class MotorStateType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MOTORS_UNDEFINED: _ClassVar[EgmMotorState.MotorStateType]
        MOTORS_ON: _ClassVar[EgmMotorState.MotorStateType]
        MOTORS_OFF: _ClassVar[EgmMotorState.MotorStateType]
    MOTORS_UNDEFINED: EgmMotorState.MotorStateType
    MOTORS_ON: EgmMotorState.MotorStateType
    MOTORS_OFF: EgmMotorState.MotorStateType
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: EgmMotorState.MotorStateType
    def __init__(self, state: _Optional[_Union[EgmMotorState.MotorStateType, str]] = ...) -> None: ...

class EgmMCIState(_message.Message):
    __slots__ = ("state",)
    class MCIStateType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        MCI_UNDEFINED: _ClassVar[EgmMCIState.MCIStateType]
        MCI_ERROR: _ClassVar[EgmMCIState.MCIStateType]
        MCI_STOPPED: _ClassVar[EgmMCIState.MCIStateType]
        MCI_RUNNING: _ClassVar[EgmMCIState.MCIStateType]
    MCI_UNDEFINED: EgmMCIState.MCIStateType
    MCI_ERROR: EgmMCIState.MCIStateType
    MCI_STOPPED: EgmMCIState.MCIStateType
    MCI_RUNNING: EgmMCIState.MCIStateType
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: EgmMCIState.MCIStateType
    def __init__(self, state: _Optional[_Union[EgmMCIState.MCIStateType, str]] = ...) -> None: ...

class EgmRapidCtrlExecState(_message.Message):
    __slots__ = ("state",)
    class RapidCtrlExecStateType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        RAPID_UNDEFINED: _ClassVar[EgmRapidCtrlExecState.RapidCtrlExecStateType]
        RAPID_STOPPED: _ClassVar[EgmRapidCtrlExecState.RapidCtrlExecStateType]
        RAPID_RUNNING: _ClassVar[EgmRapidCtrlExecState.RapidCtrlExecStateType]
    RAPID_UNDEFINED: EgmRapidCtrlExecState.RapidCtrlExecStateType
    RAPID_STOPPED: EgmRapidCtrlExecState.RapidCtrlExecStateType
    RAPID_RUNNING: EgmRapidCtrlExecState.RapidCtrlExecStateType
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: EgmRapidCtrlExecState.RapidCtrlExecStateType
    def __init__(self, state: _Optional[_Union[EgmRapidCtrlExecState.RapidCtrlExecStateType, str]] = ...) -> None: ...

class EgmTestSignals(_message.Message):
    __slots__ = ("signals",)
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    signals: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, signals: _Optional[_Iterable[float]] = ...) -> None: ...

class EgmMeasuredForce(_message.Message):
    __slots__ = ("fcActive", "force")
    FCACTIVE_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    fcActive: bool
    force: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, fcActive: _Optional[bool] = ..., force: _Optional[_Iterable[float]] = ...) -> None: ...

class EgmCollisionInfo(_message.Message):
    __slots__ = ("collsionTriggered", "collDetQuota")
    COLLSIONTRIGGERED_FIELD_NUMBER: _ClassVar[int]
    COLLDETQUOTA_FIELD_NUMBER: _ClassVar[int]
    collsionTriggered: bool
    collDetQuota: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, collsionTriggered: _Optional[bool] = ..., collDetQuota: _Optional[_Iterable[float]] = ...) -> None: ...

class EgmRAPIDdata(_message.Message):
    __slots__ = ("digVal", "dnum")
    DIGVAL_FIELD_NUMBER: _ClassVar[int]
    DNUM_FIELD_NUMBER: _ClassVar[int]
    digVal: bool
    dnum: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, digVal: _Optional[bool] = ..., dnum: _Optional[_Iterable[float]] = ...) -> None: ...

class EgmRobot(_message.Message):
    __slots__ = ("header", "feedBack", "planned", "motorState", "mciState", "mciConvergenceMet", "testSignals", "rapidExecState", "measuredForce", "utilizationRate", "moveIndex", "CollisionInfo", "RAPIDfromRobot", "torqueRef")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    PLANNED_FIELD_NUMBER: _ClassVar[int]
    MOTORSTATE_FIELD_NUMBER: _ClassVar[int]
    MCISTATE_FIELD_NUMBER: _ClassVar[int]
    MCICONVERGENCEMET_FIELD_NUMBER: _ClassVar[int]
    TESTSIGNALS_FIELD_NUMBER: _ClassVar[int]
    RAPIDEXECSTATE_FIELD_NUMBER: _ClassVar[int]
    MEASUREDFORCE_FIELD_NUMBER: _ClassVar[int]
    UTILIZATIONRATE_FIELD_NUMBER: _ClassVar[int]
    MOVEINDEX_FIELD_NUMBER: _ClassVar[int]
    COLLISIONINFO_FIELD_NUMBER: _ClassVar[int]
    RAPIDFROMROBOT_FIELD_NUMBER: _ClassVar[int]
    TORQUEREF_FIELD_NUMBER: _ClassVar[int]
    header: EgmHeader
    feedBack: EgmFeedBack
    planned: EgmPlanned
    motorState: EgmMotorState
    mciState: EgmMCIState
    mciConvergenceMet: bool
    testSignals: EgmTestSignals
    rapidExecState: EgmRapidCtrlExecState
    measuredForce: EgmMeasuredForce
    utilizationRate: float
    moveIndex: int
    CollisionInfo: EgmCollisionInfo
    RAPIDfromRobot: EgmRAPIDdata
    torqueRef: EgmJoints
    def __init__(self, header: _Optional[_Union[EgmHeader, _Mapping]] = ..., feedBack: _Optional[_Union[EgmFeedBack, _Mapping]] = ..., planned: _Optional[_Union[EgmPlanned, _Mapping]] = ..., motorState: _Optional[_Union[EgmMotorState, _Mapping]] = ..., mciState: _Optional[_Union[EgmMCIState, _Mapping]] = ..., mciConvergenceMet: _Optional[bool] = ..., testSignals: _Optional[_Union[EgmTestSignals, _Mapping]] = ..., rapidExecState: _Optional[_Union[EgmRapidCtrlExecState, _Mapping]] = ..., measuredForce: _Optional[_Union[EgmMeasuredForce, _Mapping]] = ..., utilizationRate: _Optional[float] = ..., moveIndex: _Optional[int] = ..., CollisionInfo: _Optional[_Union[EgmCollisionInfo, _Mapping]] = ..., RAPIDfromRobot: _Optional[_Union[EgmRAPIDdata, _Mapping]] = ..., torqueRef: _Optional[_Union[EgmJoints, _Mapping]] = ...) -> None: ...

class EgmSensor(_message.Message):
    __slots__ = ("header", "planned", "speedRef", "RAPIDtoRobot")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    PLANNED_FIELD_NUMBER: _ClassVar[int]
    SPEEDREF_FIELD_NUMBER: _ClassVar[int]
    RAPIDTOROBOT_FIELD_NUMBER: _ClassVar[int]
    header: EgmHeader
    planned: EgmPlanned
    speedRef: EgmSpeedRef
    RAPIDtoRobot: EgmRAPIDdata
    def __init__(self, header: _Optional[_Union[EgmHeader, _Mapping]] = ..., planned: _Optional[_Union[EgmPlanned, _Mapping]] = ..., speedRef: _Optional[_Union[EgmSpeedRef, _Mapping]] = ..., RAPIDtoRobot: _Optional[_Union[EgmRAPIDdata, _Mapping]] = ...) -> None: ...

class EgmSensorPathCorr(_message.Message):
    __slots__ = ("header", "pathCorr")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    PATHCORR_FIELD_NUMBER: _ClassVar[int]
    header: EgmHeader
    pathCorr: EgmPathCorr
    def __init__(self, header: _Optional[_Union[EgmHeader, _Mapping]] = ..., pathCorr: _Optional[_Union[EgmPathCorr, _Mapping]] = ...) -> None: ...
