// The waiting page's words, in every language it speaks: one object per
// language with the same keys (TestMessageCatalogs checks), and the one
// place its strings live. waiting.html names its static strings by key
// (data-i18n); the scripts call t(key, ...args). Plural-sensitive or
// parameterised strings are functions.

import { createI18n } from './i18n.js';

export const STRINGS = {
  en: {
    pageTitle: 'Waiting line',
    title: "You're in line",
    lede: 'Lots of people are trying to get in right now, so we let them in a few at a time. ' +
      'Keep this page open: your place is saved, even if you reload.',
    yourNumber: 'Your number in line',
    ahead: 'People ahead of you',
    waitingTotal: 'People waiting',
    eta: 'Estimated wait',
    progress: 'Your progress since you joined',
    updated: 'Last updated',
    leave: 'Leave the line',
    leaveTitle: 'Leave the line?',
    leaveBody: 'You will give up your place. If you come back later, you start again at the back of the line.',
    leaveCancel: 'Stay in line',
    leaveConfirm: 'Leave the line',
    turnTitle: "It's your turn",
    turnBody: 'Thanks for waiting. You can go in now.',
    turnLink: 'Continue',
    // The turn when the page knows nowhere to send the user: the site they
    // came from lets them in once they load it again.
    turnNowhere: 'Your turn has started. Go back to the site you came from and reload the page.',
    // The pass itself, tucked away: only a developer needs to see it.
    passSummary: 'For developers: entry pass',
    passLabel: 'Entry pass',
    passHint: 'The site you are entering checks this pass. It works until your turn ends.',
    leftTitle: 'You left the line',
    leftBody: 'You gave up your place. If you join again, you start at the back of the line.',
    joinAgain: 'Join again',
    errorTitle: 'Something went wrong',
    joining: 'Joining the line…',
    resuming: 'Checking your place in line…',
    checking: 'Checking your browser… (this takes a second)',
    errChallenge: 'We could not check your browser. Please try again.',
    // The line is at its cap (queue_full); time is HH:MM, local. The
    // panel reads: fullTitle, then fullBody.
    fullTitle: 'The line is full right now',
    fullBody: (time) => 'Try again at ' + time + ' (local time).',
    fullAuto: 'This page will try once more by itself at that time.',
    fullRetry: 'Try again',
    // n is formatted, count the number (for plurals); eta is waitText's
    // text, the same as the Estimated wait card shows.
    summary: (n, count, eta) =>
      (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; estimated wait ' + eta,
    // While the line is paused: no estimate, and no promise of one.
    summaryPaused: (n, count) =>
      (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; the line is paused',
    paused: 'The line is paused. You keep your place, and it will move again when the line resumes.',
    etaPaused: 'Paused',
    reconnecting: (s) => 'Connection lost. Reconnecting… (next try in ' + s + ' s)',
    live: (n) => 'You are number ' + n + ' in line',
    liveAbout: (n) => 'You are about number ' + n + ' in line',
    about: (n) => 'about ' + n,
    rejoined: 'Your earlier place had expired, so you joined the line again at the back.',
    rejoinedExpired: 'Your earlier turn had run out of time, so you joined the line again at the back.',
    rejoinedDone: 'You had finished your earlier turn, so you joined the line again at the back.',
    rejoinedRemoved: 'The site removed your earlier place, so you joined the line again at the back.',
    rejoinedLeft: 'You had given up your earlier place, so you joined the line again at the back.',
    usedElsewhere: 'Your entry pass was used from too many places, as if it had been shared, so it was cancelled. ' +
      'You joined the line again at the back.',
    // Shown in every waiting state: nobody needs to click anything.
    autoNote: 'Please wait: you will be let in automatically, in order. Keep this page open.',
    // A scheduled opening, before its pre-queue window.
    notOpenTitle: 'The line is not open yet',
    notOpenLede: 'This line opens at a set time. Keep this page open: you will join it automatically.',
    notOpenStatus: (time) => 'The line opens for joining at ' + time,
    notOpenIn: 'Opens for joining in',
    // Everyone in the window is drawn in a random order: no need to hurry.
    notOpenDraw: (from, opens) => 'Everyone who joins between ' + from + ' and ' + opens +
      ' gets a place in a random order at ' + opens + ', so there is no need to hurry.',
    notOpenLive: (time) => 'The line opens for joining at ' + time + '. This page will join it automatically.',
    // In the draw: no number yet.
    drawTitle: 'You are in the draw',
    drawLede: 'Everyone who joins before the line opens gets a place in a random order, so there is no need to hurry. ' +
      'Keep this page open: your place in the draw is saved, even if you reload.',
    drawLabel: 'You are in the draw',
    drawBody: (time) => 'At ' + time + ' everyone here gets a place in a random order.',
    drawIn: 'The draw is in',
    drawing: 'The order is being drawn. Your number comes in a moment.',
    summaryDraw: (n, count, time) =>
      (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; the draw is at ' + time,
    summaryDrawing: (n, count) =>
      (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; the order is being drawn',
    drawLive: (time) => 'You are in the draw. At ' + time + ' everyone here gets a place in a random order.',
    // The place was dropped as abandoned.
    releasedTitle: 'Your place was released',
    releasedBody: "We didn't hear from this page for a while, so your place was released. " +
      'This happens when the page is closed, or the device sleeps, when the line reaches you.',
    rejoin: 'Join again at the back',
    days: (d) => d + (d === 1 ? ' day' : ' days'),
    errQueue: 'This waiting line does not exist. Please check the address.',
    errJoin: 'This link to the waiting line is not valid or has expired. Go back to the site and open the waiting line again.',
    errLost: 'We could not keep your place in line.',
    errGeneric: (code) => 'The waiting room answered with an error (' + code + ').',
    etaSoon: 'less than a minute',
    etaMin: (m) => 'about ' + m + ' min',
    etaHours: (h, m) => 'about ' + h + ' h' + (m ? ' ' + m + ' min' : ''),
    // ---- Issue 22: the wait as a range, and the turn's alerts ----
    // range is Intl's "12–15 min" (waiting-format.js etaRange).
    etaAbout: (range) => 'about ' + range,
    // The range's low end is under a minute: only its top is told.
    etaUpTo: (max) => 'up to ' + max,
    // Asks for the browser's notification permission, on click only.
    notifyMe: "Notify me when it's my turn",
    notifyOn: "You'll get a notification when it's your turn.",
    // ---- end of issue 22 ----
    // ---- Moving the place to another device (issue 22, waiting-move.js) ----
    moveButton: 'Continue on another device',
    moveTitle: 'Continue on another device',
    moveHelp: 'Scan this QR code with your other device, or open the waiting line there and type the code. ' +
      'Your place moves there, with the same number, and this page stops holding it.',
    moveQrAlt: 'QR code to continue on another device',
    moveCodeLabel: 'Code',
    moveExpires: (time) => 'The code works once, until ' + time + '.',
    moveClose: 'Close',
    moveFailed: 'We could not prepare the move. Please try again.',
    moveUseSummary: 'Moving your place here from another device?',
    moveUseLabel: 'Code shown on the other device',
    moveUse: 'Move my place here',
    moveInvalid: 'This code or link is not valid, was already used, or has expired. Ask the other device for a new one.',
    movedHere: 'Your place moved to this device.',
    movedTitle: 'Your place moved to another device',
    movedBody: 'You continued on another device, so this page no longer holds your place. ' +
      'If you join again here, you start at the back of the line.',
    // ---- end of moving the place ----
  },
  ko: {
    pageTitle: '접속 대기',
    title: '접속 대기 중입니다',
    lede: '지금 접속하려는 사람이 많아 순서대로 입장하고 있습니다. ' +
      '이 페이지를 열어 두세요. 새로고침해도 순번은 유지됩니다.',
    yourNumber: '나의 대기 순번',
    ahead: '내 앞 대기 인원',
    waitingTotal: '전체 대기 인원',
    eta: '예상 대기 시간',
    progress: '대기 진행률',
    updated: '마지막 업데이트',
    leave: '대기 취소',
    leaveTitle: '대기를 취소할까요?',
    leaveBody: '지금 순번을 잃게 됩니다. 나중에 다시 들어오면 맨 뒤에서부터 기다려야 합니다.',
    leaveCancel: '계속 기다리기',
    leaveConfirm: '대기 취소',
    turnTitle: '입장할 차례입니다',
    turnBody: '기다려 주셔서 감사합니다. 지금 입장할 수 있습니다.',
    turnLink: '입장하기',
    turnNowhere: '입장 차례가 시작되었습니다. 원래 이용하시던 사이트로 돌아가 페이지를 새로고침해 주세요.',
    passSummary: '개발자용: 입장권',
    passLabel: '입장권',
    passHint: '입장할 사이트에서 이 입장권을 확인합니다. 입장 시간이 끝날 때까지 유효합니다.',
    leftTitle: '대기를 취소했습니다',
    leftBody: '순번을 반납했습니다. 다시 줄을 서면 맨 뒤에서부터 시작합니다.',
    joinAgain: '다시 줄 서기',
    errorTitle: '문제가 발생했습니다',
    joining: '대기열에 들어가는 중…',
    resuming: '대기 순번을 확인하는 중…',
    checking: '브라우저를 확인하는 중… (잠시면 됩니다)',
    errChallenge: '브라우저 확인을 마치지 못했습니다. 다시 시도해 주세요.',
    fullTitle: '지금은 대기열이 가득 찼습니다',
    fullBody: (time) => time + '(현지 시각)에 다시 시도해 주세요.',
    fullAuto: '그 시각에 이 페이지가 한 번 더 자동으로 시도합니다.',
    fullRetry: '다시 시도',
    summary: (n, count, eta) => '현재 대기 인원 ' + n + '명, 예상 대기 시간 ' + eta,
    summaryPaused: (n) => '현재 대기 인원 ' + n + '명, 대기열 일시 정지 중',
    paused: '대기열이 잠시 멈췄습니다. 순번은 그대로 유지되며, 대기열이 다시 움직이면 이어서 진행됩니다.',
    etaPaused: '일시 정지',
    reconnecting: (s) => '연결이 끊겼습니다. 다시 연결하는 중… (' + s + '초 후 재시도)',
    live: (n) => '대기 순번 ' + n + '번입니다',
    liveAbout: (n) => '대기 순번 약 ' + n + '번입니다',
    about: (n) => '약 ' + n,
    rejoined: '이전 순번이 만료되어 맨 뒤에서 다시 줄을 섰습니다.',
    rejoinedExpired: '이전 입장 시간이 끝나 맨 뒤에서 다시 줄을 섰습니다.',
    rejoinedDone: '이전 입장을 마치셨기 때문에 맨 뒤에서 다시 줄을 섰습니다.',
    rejoinedRemoved: '사이트에서 이전 순번을 삭제하여 맨 뒤에서 다시 줄을 섰습니다.',
    rejoinedLeft: '이전 순번을 취소하셨기 때문에 맨 뒤에서 다시 줄을 섰습니다.',
    usedElsewhere: '입장권이 여러 곳에서 사용되어 공유된 것으로 보고 취소했습니다. 맨 뒤에서 다시 줄을 섰습니다.',
    autoNote: '잠시만 기다리시면 순서대로 자동 접속됩니다. 이 페이지를 닫지 마세요.',
    notOpenTitle: '아직 대기열이 열리지 않았습니다',
    notOpenLede: '이 대기열은 정해진 시각에 열립니다. 이 페이지를 열어 두시면 자동으로 줄을 섭니다.',
    notOpenStatus: (time) => time + '부터 줄을 설 수 있습니다',
    notOpenIn: '줄서기 시작까지',
    notOpenDraw: (from, opens) => from + '부터 ' + opens + ' 사이에 들어온 분은 모두 ' + opens +
      '에 무작위 추첨으로 순번을 받습니다. 서두르지 않으셔도 됩니다.',
    notOpenLive: (time) => time + '부터 줄을 설 수 있습니다. 이 페이지가 자동으로 줄을 섭니다.',
    drawTitle: '추첨 대기 중입니다',
    drawLede: '대기열이 열리기 전에 들어온 분은 모두 무작위 추첨으로 순번을 받으므로 서두르지 않으셔도 됩니다. ' +
      '이 페이지를 열어 두세요. 새로고침해도 추첨 참여는 유지됩니다.',
    drawLabel: '추첨에 참여했습니다',
    drawBody: (time) => time + '에 이곳의 모든 분이 무작위 순서로 순번을 받습니다.',
    drawIn: '추첨까지',
    drawing: '순번을 추첨하고 있습니다. 잠시 후 순번이 표시됩니다.',
    summaryDraw: (n, count, time) => '현재 대기 인원 ' + n + '명, ' + time + ' 추첨',
    summaryDrawing: (n) => '현재 대기 인원 ' + n + '명, 순번 추첨 중',
    drawLive: (time) => '추첨에 참여했습니다. ' + time + '에 모든 분이 무작위 순서로 순번을 받습니다.',
    releasedTitle: '대기 순번이 해제되었습니다',
    releasedBody: '한동안 이 페이지의 응답이 없어 순번이 해제되었습니다. ' +
      '차례가 왔을 때 페이지가 닫혀 있거나 기기가 절전 상태이면 이렇게 됩니다.',
    rejoin: '맨 뒤에서 다시 줄 서기',
    days: (d) => d + '일',
    errQueue: '존재하지 않는 대기열입니다. 주소를 확인해 주세요.',
    errJoin: '대기열 링크가 올바르지 않거나 만료되었습니다. 사이트로 돌아가 대기열에 다시 들어와 주세요.',
    errLost: '대기 순번을 유지하지 못했습니다.',
    errGeneric: (code) => '대기열 서버가 오류로 응답했습니다 (' + code + ').',
    etaSoon: '1분 미만',
    etaMin: (m) => '약 ' + m + '분',
    etaHours: (h, m) => '약 ' + h + '시간' + (m ? ' ' + m + '분' : ''),
    // ---- Issue 22: the wait as a range, and the turn's alerts ----
    etaAbout: (range) => '약 ' + range,
    etaUpTo: (max) => '최대 ' + max,
    notifyMe: '차례가 되면 알림 받기',
    notifyOn: '차례가 되면 알림을 보내 드립니다.',
    // ---- end of issue 22 ----
    // ---- Moving the place to another device (issue 22, waiting-move.js) ----
    moveButton: '다른 기기에서 계속하기',
    moveTitle: '다른 기기에서 계속하기',
    moveHelp: '다른 기기로 이 QR 코드를 스캔하거나, 그 기기에서 대기열을 열고 코드를 입력하세요. ' +
      '같은 순번 그대로 그 기기로 옮겨지고, 이 페이지에서는 더 이상 순번이 유지되지 않습니다.',
    moveQrAlt: '다른 기기에서 계속하기 위한 QR 코드',
    moveCodeLabel: '코드',
    moveExpires: (time) => '이 코드는 ' + time + '까지 한 번만 쓸 수 있습니다.',
    moveClose: '닫기',
    moveFailed: '기기 이동을 준비하지 못했습니다. 다시 시도해 주세요.',
    moveUseSummary: '다른 기기의 순번을 이 기기로 옮기시나요?',
    moveUseLabel: '다른 기기에 표시된 코드',
    moveUse: '이 기기로 순번 옮기기',
    moveInvalid: '코드나 링크가 올바르지 않거나, 이미 사용되었거나, 만료되었습니다. 다른 기기에서 새 코드를 받아 주세요.',
    movedHere: '순번이 이 기기로 옮겨졌습니다.',
    movedTitle: '순번이 다른 기기로 옮겨졌습니다',
    movedBody: '다른 기기에서 계속하기로 하여 이 페이지에서는 더 이상 순번이 유지되지 않습니다. ' +
      '여기서 다시 줄을 서면 맨 뒤에서부터 기다려야 합니다.',
    // ---- end of moving the place ----
  },
};

export const i18n = createI18n(STRINGS);
export const t = i18n.t;
