"""Answers shaped as ABB documents them, for the parsing tests: RWS 1.0's XHTML examples from its
reference (developercenter.robotstudio.com/api/rwsApi), its ``?json=1`` form (``_embedded._state``,
the form ABB's own JavaScript example reads), and RWS 2.0's HAL JSON (``state``,
``_embedded.resources``, ``status``) as an OmniCore controller answers."""

RW6_CTRLSTATE_XHTML = b"""<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml">
<head>
<title>panel</title>
<base href= "http://localhost/rw/panel/ctrlstate/" />
</head>
<body>
<div class="state">
<a href= "" rel="self"/>
<a href= "?action=show" rel="action"/>
<ul>
<li class="pnl-ctrlstate" title="ctrlstate">
<span class="ctrlstate">motoron</span>
</li>
</ul>
</div>
</body>
</html>"""

RW6_CTRLSTATE_JSON = (b'{"_links":{"base":{"href":"http://localhost/rw/panel/"}},"_embedded":{"_state":'
                      b'[{"_type":"pnl-ctrlstate","_title":"ctrlstate","ctrlstate":"motoroff"}]}}')

RW6_EXECUTION_JSON = (b'{"_links":{"base":{"href":"http://localhost/rw/rapid/"}},"_embedded":{"_state":'
                      b'[{"_type":"rap-execution","_title":"execution","ctrlexecstate":"running","cycle":"forever"}]}}')

RW6_OPMODE_JSON = (b'{"_links":{"base":{"href":"http://localhost/rw/panel/"}},"_embedded":{"_state":'
                   b'[{"_type":"pnl-opmode","_title":"opmode","opmode":"AUTO"}]}}')

RW6_SPEEDRATIO_JSON = (b'{"_links":{"base":{"href":"http://localhost/rw/panel/"}},"_embedded":{"_state":'
                       b'[{"_type":"pnl-speedratio","_title":"speedratio","speedratio":"75"}]}}')

RW6_SIGNAL_JSON = (b'{"_links":{"base":{"href":"http://localhost/rw/iosystem/"}},"_embedded":{"_state":'
                   b'[{"_type":"ios-signal","_title":"Local/DRV_1/DO1","name":"DO1","type":"DO","category":"",'
                   b'"lvalue":"1","lstate":"not simulated"}]}}')

RW6_ERROR_XHTML = b"""<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml">
<head>
<title>rw</title>
<base href="" />
</head>
<body>
<div class="status">
<span class="code">-1073414146</span>
<span class="msg">rws_resource_rapid_symbol_data.cpp[534] ERROR:rws_component_rapid.cpp[426]: org_code: -4501 new_code: 0xc004841d; code:-1073414146 icode:-1</span>
</div>
</body>
</html>"""

RW6_ERROR_JSON = (b'{"_links":{"base":{"href":"http://localhost/"}},"_embedded":{"status":'
                  b'{"code":-1073445879,"msg":"Task NO_SUCH_TASK does not exist"}}}')

RW6_ELOG_MESSAGE_XHTML = b"""<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml">
  <head>
    <title>Elog</title>
    <base href="http://localhost/rw/elog/"/>
  </head>
  <body>
    <div class="state">
      <a href="" rel="self"></a>
      <ul>
        <a href="0" rel="self"></a>
        <li class="elog-message" title="/rw/elog/0/8">
            <span class="msgtype">2</span>
            <span class="code">20573</span>
            <span class="src-name">MC0</span>
            <span class="tstamp">2013-09-08 T 11:22:10</span>
            <span class="argc">2</span>
            <span class="arg1" type="string">EIO</span>
            <span class="arg2" type="string">6.0</span>
        </li>
      </ul>
    </div>
  </body>
</html>"""

RW6_BUILD_ERRORS_XHTML = b"""<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml">
<head><title>rapid</title>
<base href="http://127.0.0.1/rw/rapid/"/>
</head>
<body>
div class="state">
<a href= "tasks/T_ROB1/program/builderror?limit=2" rel="self"/>
<ul>
<li class="rap-builderrs" title="builderrs">
<span class="ModuleName">MainModule</span>
<span class="row">15</span>
<span class="column">8</span>
<span class="error">S:"';'"</span>
</li>
<li class="rap-builderrs" title="builderrs">
<span class="ModuleName">MainModule</span>
<span class="row">19</span>
<span class="column">8</span>
<span class="error">S:"';'"</span>
</li>
</ul>
</div>
</body>
</html>"""

RW6_RMMP_POLL_XHTML = b"""<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml">
<head>
<title>ROBAPI2 User</title>
<base href="http://localhost/users/rmmp/poll/" />
</head>
<body>
<div class="state">
<a href="" rel="self" />
<a href="?action=show" rel="action" />
<ul>
<li class="user-rmmp-poll" tile="state">
<span class="code">-1073445870</span>
<span class="status">NO SUCH REQUEST</span>
</li>
</ul>
</div>
</body>
</html>"""

RW6_SUBSCRIBED_XHTML = b"""<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml">
<head>
    <title>Event</title>
    <base href="http://localhost/"/>
</head>
<body>
    <div class="state">
    <a href="subscription/4" rel="group"/>
    <a href="ws://localhost/poll/4" rel="self"/>
    <a href="subscription/4?action=show" rel="action"/>
    <ul>
        <li class="rap-ctrlexecstate-ev" title="ctrlexecstate">
            <a href="/rw/rapid/execution;ctrlexecstate" rel="self"/>
            <span class="ctrlexecstate">stopped</span>
        </li>
    </ul>
    </div>
</body>
</html>"""

ELOG_EVENT_XHTML = """<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml">
<head>
    <title>Subscription Event</title>
</head>
<body>
<a href="ws://localhost/poll/1" rel="events"></a>
<a href="http://localhost/subscription/1?action=show" rel="action"></a>
<div class="state">
    <ul>
    <li class="elog-message-ev">
        <a href="/rw/elog/0/15" rel="self"/>
        <span class="seqnum">15</span>
    </li>
    </ul>
</div>
</body>
</html>"""

SIGNAL_EVENT_XHTML = """<html><body><div class="state"><ul>
<li class="ios-signalstate-ev" title="signalstate">
<a href="/rw/iosystem/signals/Local/DRV_1/DO1;state" rel="self"/>
<span class="lvalue">1</span>
<span class="lstate">not simulated</span>
</li></ul></div></body></html>"""

RW7_CTRLSTATE = (b'{ "_links" : { "base" : { "href" : "https://127.0.0.1:5466/rw/panel/ctrl-state/" }, "self" : '
                 b'{ "href" : "" } } ,"status" : {"code":294912} , "state" : [ { "_type" : "pnl-ctrlstate", '
                 b'"_title" : "ctrl-state", "ctrlstate" : "motoroff" } ]}')

RW7_SIGNALS_PAGE = (b'{ "_links" : { "base" : { "href" : "https://127.0.0.1:5466/rw/iosystem/" },"self" : { "href" : '
                    b'"signals?start=0&amp;limit=3" }  , "next" : { "href" : "signals?start=3&amp;limit=3" }   }  , '
                    b'"_embedded" : { "resources" : [  { "_links" : { "self" : { "href" : "signals/Net/Dev/doGripper" } },'
                    b' "_type" : "ios-signal-li", "_title" : "Net/Dev/doGripper", "name" : "doGripper", "type" : "DO", '
                    b'"category" : "user", "lvalue" : "1", "lstate" : "not simulated" } , { "_links" : { "self" : { '
                    b'"href" : "signals/Net/Dev/diSensor" } }, "_type" : "ios-signal-li", "_title" : '
                    b'"Net/Dev/diSensor", "name" : "diSensor", "type" : "DI", "category" : "user", "lvalue" : "0", '
                    b'"lstate" : "not simulated" } ] }}')

RW7_ELOG = (b'{ "_links" : { "base" : { "href" : "https://127.0.0.1:5466/rw/elog/" },"self" : { "href" : '
            b'"0?lang=en" } }  , "_embedded" : { "resources" : [ { "_links" : { "self": { "href": "0/1?lang=en"} }, '
            b'"_type":"elog-message-li", "_title":"/rw/elog/0/1"  ,"msgtype":"1", "code":"10046", '
            b'"tstamp":"2026-07-08 T 18:04:04", "title":"System reset", "desc":"Loading the original system '
            b'installation settings.", "conseqs":"", "causes":"", "actions":"", "argc":"0" } ] }}')

RW7_SYSTEM = (b'{ "_links" : { "base": { "href": "https://127.0.0.1:5466/rw/system/" }, "self" : { "href" : "" } }  , '
              b'"state" : [ { "_type":"sys-system", "_title":"system", "major":"7", "minor":"21", '
              b'"name":"IRB1600_6_120_3", "rwversion":"7.21.0+229", "sysid":"{57540804-EA1F-4397-8EA2-5B2B1E729D97}",'
              b' "starttm":"2026-07-08 T 18:04:15" } ], "_embedded" : { "resources" : [ { "_links" : { "self" : { '
              b'"href" : "options" } }, "_type" : "sys-options-li", "_title" : "options", "options" : [ { "_type" : '
              b'"sys-options", "_title" : "0", "option" : "RobotControl Base" } ] } ] }}')

RW7_MODULES = (b'{ "_links" : { "base" : { "href" : "https://127.0.0.1:5466/rw/rapid/" }, "self" : { "href" : '
               b'"tasks/T_ROB1/modules" } } ,"status" : {"code":294912} , "state" : [ { "_type" : "rap-module-info-li",'
               b' "_title" : "T_ROB1/BASE", "name" : "BASE", "type" : "SysMod" }, { "_type" : "rap-module-info-li", '
               b'"_title" : "T_ROB1/MainModule", "name" : "MainModule", "type" : "ProgMod" } ]}')

RW7_TASK_NOT_FOUND = (b'{ "_links":{ "base": { "href": "https://127.0.0.1:5466/" } } ,"status" : {"code":-1073445879, '
                      b'"msg":"rws_resource_rapid_task.cpp[620] ERROR: Task NO_SUCH_TASK does not exist;  '
                      b'code:-1073445879 icode:-1"}}')
