MODULE RobohalEgm
    !
    ! robohal EGM loop: the controller streams the robot's state to the PC every 4 ms
    ! and follows the targets robohal answers with (abb-egm://0.0.0.0:6510?model=...).
    !
    ! Needs RobotWare option 3124-1 Externally Guided Motion and a UDP Unicast Device
    ! named ROBOHAL_PC (Configuration > Communication > Transmission Protocol, Type UDPUC,
    ! Remote Address = the PC's IP, Remote Port Number = 6510); see SETUP.md next to this file.
    !
    ! EGM_MODE selects what robohal sends: "joint" (EGMRunJoint, robohal's default) or
    ! "pose" (EGMRunPose, tool0 in the base frame; connect with ?mode=pose).
    !
    ! I/O (robohal's robot.io and robot.gripper) rides on EGM's RAPID data: while EGM runs,
    ! the loop in RunEgm sets the outputs robohal sends and reports the inputs back.
    ! Name your signals in DO_NAMES .. AI_NAMES, in the order the robohal URI names them
    ! (do=, ao=, di=, ai=); "" leaves a place unused. SETUP.md, section 4, has the details.
    !
    CONST string EGM_DEVICE := "ROBOHAL_PC";
    CONST string EGM_CONFIG := "default";    ! External Motion Interface Data (Motion topic)
    CONST string EGM_MODE := "joint";
    ! No data from the PC for this long (s) raises ERR_UDPUC_COMM: the run stops.
    CONST num COMM_TIMEOUT := 1;
    ! The run ends by itself once the convergence below has held this long (s). A short
    ! \CondTime (1 s is the default) ends EGM whenever the PC holds still; robohal holds
    ! between motions, so keep it long and let the PC decide when motion ends.
    CONST num COND_TIME := 86400;
    ! The default \MaxSpeedDeviation is 1 deg/s: far too slow for streamed motion.
    CONST num MAX_SPEED_DEV := 250;          ! deg/s (joint mode), mm/s (pose mode)
    CONST num MAX_POS_DEV := 1000;           ! deg or mm
    ! Convergence band per axis: +-0.5 deg, EGMActJoint's default; +-1 mm / +-0.5 deg for poses.
    CONST egm_minmax JOINT_CONV := [-0.5, 0.5];
    CONST egm_minmax POS_CONV := [-1, 1];
    CONST egm_minmax ROT_CONV := [-0.5, 0.5];
    ! A fine point to start from: the first motion after a restart must be an ordinary move.
    CONST jointtarget EGM_START := [[0, 0, 0, 0, 30, 0], [9E9, 9E9, 9E9, 9E9, 9E9, 9E9]];
    CONST pose BASE_FRAME := [[0, 0, 0], [1, 0, 0, 0]];

    ! The controller's signals robohal sets (outputs) and reads (inputs), in the URI's order.
    CONST string DO_NAMES{4} := ["", "", "", ""];
    CONST string AO_NAMES{2} := ["", ""];
    CONST string DI_NAMES{4} := ["", "", "", ""];
    CONST string AI_NAMES{2} := ["", ""];
    ! s between two passes of the I/O loop: three EGM periods (an output follows within about 16 ms)
    CONST num IO_PERIOD := 0.012;
    ! From robohal with every answer: [1, do..., ao...]; the leading 1 says robohal's outputs
    ! follow (cleared when a session starts, so nothing old or empty is ever applied).
    PERS dnum robohal_from_pc{40};
    ! To robohal with every robot message: [#di, #ai, #do, #ao, di..., ai..., do..., ao...]: how
    ! many signals of each kind are named below (robohal checks them against its URI), the
    ! inputs, then the outputs as they are.
    PERS dnum robohal_to_pc{40};

    VAR egmident egm_id;
    VAR num n_do := 0;
    VAR num n_ao := 0;
    VAR num n_di := 0;
    VAR num n_ai := 0;
    ! AliasIO binds these to the names above when the program starts
    VAR signaldo rh_do1;
    VAR signaldo rh_do2;
    VAR signaldo rh_do3;
    VAR signaldo rh_do4;
    VAR signalao rh_ao1;
    VAR signalao rh_ao2;
    VAR signaldi rh_di1;
    VAR signaldi rh_di2;
    VAR signaldi rh_di3;
    VAR signaldi rh_di4;
    VAR signalai rh_ai1;
    VAR signalai rh_ai2;

    PROC main()
        BindSignals;
        MoveAbsJ EGM_START, v100, fine, tool0;
        WHILE TRUE DO
            ! Each pass is one EGM session: robohal sees seqno 0 and holds the measured position.
            RunEgm;
        ENDWHILE
    ENDPROC

    PROC RunEgm()
        EGMReset egm_id;
        EGMGetId egm_id;
        robohal_from_pc{1} := 0;    ! nothing is applied before robohal's first answer says so
        ReportIo;                   ! the first robot message already carries the signals as they are
        IF EGM_MODE = "pose" THEN
            EGMSetupUC ROB_1, egm_id, EGM_CONFIG, EGM_DEVICE \Pose \CommTimeout:=COMM_TIMEOUT;
            EGMActPose egm_id \Tool:=tool0 \WObj:=wobj0 \DataToSensor:=robohal_to_pc \DataFromSensor:=robohal_from_pc,
                BASE_FRAME, EGM_FRAME_BASE, BASE_FRAME, EGM_FRAME_BASE
                \x:=POS_CONV \y:=POS_CONV \z:=POS_CONV \rx:=ROT_CONV \ry:=ROT_CONV \rz:=ROT_CONV
                \MaxPosDeviation:=MAX_POS_DEV \MaxSpeedDeviation:=MAX_SPEED_DEV;
            EGMRunPose egm_id, EGM_STOP_HOLD \NoWaitCond \x \y \z \Rx \Ry \Rz \CondTime:=COND_TIME \RampInTime:=0.05;
        ELSE
            EGMSetupUC ROB_1, egm_id, EGM_CONFIG, EGM_DEVICE \Joint \CommTimeout:=COMM_TIMEOUT;
            EGMActJoint egm_id \DataToSensor:=robohal_to_pc \DataFromSensor:=robohal_from_pc
                \J1:=JOINT_CONV \J2:=JOINT_CONV \J3:=JOINT_CONV \J4:=JOINT_CONV \J5:=JOINT_CONV \J6:=JOINT_CONV
                \MaxPosDeviation:=MAX_POS_DEV \MaxSpeedDeviation:=MAX_SPEED_DEV;
            EGMRunJoint egm_id, EGM_STOP_HOLD \NoWaitCond \J1 \J2 \J3 \J4 \J5 \J6 \CondTime:=COND_TIME \RampInTime:=0.05;
        ENDIF
        ! \NoWaitCond: the program goes on while EGM runs, and serves the I/O until the run ends
        WHILE EGMGetState(egm_id) = EGM_STATE_RUNNING DO
            ApplyOutputs;
            ReportIo;
            WaitTime IO_PERIOD;
        ENDWHILE
        EGMReset egm_id;
    ERROR
        IF ERRNO = ERR_UDPUC_COMM THEN
            ! Event 41822 "No data from the UdpUc device": robohal is not running, was closed,
            ! or a firewall or cable drops its replies. Wait, then start a new session.
            TPWrite "robohal EGM: no data from the PC for " \Num:=COMM_TIMEOUT;
            EGMReset egm_id;
            WaitTime 1;
            TRYNEXT;
        ENDIF
    ENDPROC

    ! I/O over EGM's RAPID data ----------------------------------------------------------

    PROC BindSignals()
        n_do := Used(DO_NAMES);
        n_ao := Used(AO_NAMES);
        n_di := Used(DI_NAMES);
        n_ai := Used(AI_NAMES);
        IF n_do >= 1 AliasIO DO_NAMES{1}, rh_do1;
        IF n_do >= 2 AliasIO DO_NAMES{2}, rh_do2;
        IF n_do >= 3 AliasIO DO_NAMES{3}, rh_do3;
        IF n_do >= 4 AliasIO DO_NAMES{4}, rh_do4;
        IF n_ao >= 1 AliasIO AO_NAMES{1}, rh_ao1;
        IF n_ao >= 2 AliasIO AO_NAMES{2}, rh_ao2;
        IF n_di >= 1 AliasIO DI_NAMES{1}, rh_di1;
        IF n_di >= 2 AliasIO DI_NAMES{2}, rh_di2;
        IF n_di >= 3 AliasIO DI_NAMES{3}, rh_di3;
        IF n_di >= 4 AliasIO DI_NAMES{4}, rh_di4;
        IF n_ai >= 1 AliasIO AI_NAMES{1}, rh_ai1;
        IF n_ai >= 2 AliasIO AI_NAMES{2}, rh_ai2;
    ENDPROC

    ! How many names are given (the first "" ends the list).
    FUNC num Used(string names{*})
        FOR i FROM 1 TO Dim(names, 1) DO
            IF names{i} = "" RETURN i - 1;
        ENDFOR
        RETURN Dim(names, 1);
    ENDFUNC

    ! robohal's outputs, once its leading 1 says they are there.
    PROC ApplyOutputs()
        IF robohal_from_pc{1} <> 1 RETURN;
        FOR i FROM 1 TO n_do DO
            SetDigital i, DnumToNum(robohal_from_pc{1 + i});
        ENDFOR
        FOR i FROM 1 TO n_ao DO
            SetAnalog i, DnumToNum(robohal_from_pc{1 + n_do + i});
        ENDFOR
    ENDPROC

    ! The counts, the inputs, then the outputs as the controller has them.
    PROC ReportIo()
        VAR num k := 4;
        robohal_to_pc{1} := NumToDnum(n_di);
        robohal_to_pc{2} := NumToDnum(n_ai);
        robohal_to_pc{3} := NumToDnum(n_do);
        robohal_to_pc{4} := NumToDnum(n_ao);
        FOR i FROM 1 TO n_di DO
            k := k + 1;
            robohal_to_pc{k} := NumToDnum(Digital(i, TRUE));
        ENDFOR
        FOR i FROM 1 TO n_ai DO
            k := k + 1;
            robohal_to_pc{k} := NumToDnum(Analog(i, TRUE));
        ENDFOR
        FOR i FROM 1 TO n_do DO
            k := k + 1;
            robohal_to_pc{k} := NumToDnum(Digital(i, FALSE));
        ENDFOR
        FOR i FROM 1 TO n_ao DO
            k := k + 1;
            robohal_to_pc{k} := NumToDnum(Analog(i, FALSE));
        ENDFOR
    ENDPROC

    PROC SetDigital(num i, num value)
        VAR num on := 0;
        IF value >= 0.5 on := 1;    ! robohal sends 0 or 1
        TEST i
        CASE 1: SetDO rh_do1, on;
        CASE 2: SetDO rh_do2, on;
        CASE 3: SetDO rh_do3, on;
        CASE 4: SetDO rh_do4, on;
        ENDTEST
    ENDPROC

    PROC SetAnalog(num i, num value)
        TEST i
        CASE 1: SetAO rh_ao1, value;
        CASE 2: SetAO rh_ao2, value;
        ENDTEST
    ENDPROC

    ! Digital input i (input = TRUE) or output i as it is now, 0 or 1.
    FUNC num Digital(num i, bool input)
        IF input THEN
            TEST i
            CASE 1: RETURN DInput(rh_di1);
            CASE 2: RETURN DInput(rh_di2);
            CASE 3: RETURN DInput(rh_di3);
            CASE 4: RETURN DInput(rh_di4);
            ENDTEST
        ELSE
            TEST i
            CASE 1: RETURN DOutput(rh_do1);
            CASE 2: RETURN DOutput(rh_do2);
            CASE 3: RETURN DOutput(rh_do3);
            CASE 4: RETURN DOutput(rh_do4);
            ENDTEST
        ENDIF
        RETURN 0;
    ENDFUNC

    FUNC num Analog(num i, bool input)
        IF input THEN
            TEST i
            CASE 1: RETURN AInput(rh_ai1);
            CASE 2: RETURN AInput(rh_ai2);
            ENDTEST
        ELSE
            TEST i
            CASE 1: RETURN AOutput(rh_ao1);
            CASE 2: RETURN AOutput(rh_ao2);
            ENDTEST
        ENDIF
        RETURN 0;
    ENDFUNC
ENDMODULE
