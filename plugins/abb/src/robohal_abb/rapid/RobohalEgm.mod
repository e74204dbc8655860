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

    VAR egmident egm_id;

    PROC main()
        MoveAbsJ EGM_START, v100, fine, tool0;
        WHILE TRUE DO
            ! Each pass is one EGM session: robohal sees seqno 0 and holds the measured position.
            RunEgm;
        ENDWHILE
    ENDPROC

    PROC RunEgm()
        EGMReset egm_id;
        EGMGetId egm_id;
        IF EGM_MODE = "pose" THEN
            EGMSetupUC ROB_1, egm_id, EGM_CONFIG, EGM_DEVICE \Pose \CommTimeout:=COMM_TIMEOUT;
            EGMActPose egm_id \Tool:=tool0 \WObj:=wobj0, BASE_FRAME, EGM_FRAME_BASE, BASE_FRAME, EGM_FRAME_BASE
                \x:=POS_CONV \y:=POS_CONV \z:=POS_CONV \rx:=ROT_CONV \ry:=ROT_CONV \rz:=ROT_CONV
                \MaxPosDeviation:=MAX_POS_DEV \MaxSpeedDeviation:=MAX_SPEED_DEV;
            EGMRunPose egm_id, EGM_STOP_HOLD \x \y \z \Rx \Ry \Rz \CondTime:=COND_TIME \RampInTime:=0.05;
        ELSE
            EGMSetupUC ROB_1, egm_id, EGM_CONFIG, EGM_DEVICE \Joint \CommTimeout:=COMM_TIMEOUT;
            EGMActJoint egm_id
                \J1:=JOINT_CONV \J2:=JOINT_CONV \J3:=JOINT_CONV \J4:=JOINT_CONV \J5:=JOINT_CONV \J6:=JOINT_CONV
                \MaxPosDeviation:=MAX_POS_DEV \MaxSpeedDeviation:=MAX_SPEED_DEV;
            EGMRunJoint egm_id, EGM_STOP_HOLD \J1 \J2 \J3 \J4 \J5 \J6 \CondTime:=COND_TIME \RampInTime:=0.05;
        ENDIF
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
ENDMODULE
